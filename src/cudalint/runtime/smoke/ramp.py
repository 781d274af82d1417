"""`--batch-sizes 1,8,32`: run the target at each batch size, smallest first, recording the
peak memory and the time of each; stop at the first out-of-memory and report the largest size
that fits.

Peak memory: on MPS `torch.mps.driver_allocated_memory()` after the run (Metal's allocation for
the process, the figure the guides use); on CUDA `torch.cuda.max_memory_allocated()` since a
reset; on the CPU the process's peak resident set size, which only grows, so each size's figure
is the peak so far (sizes run smallest first)."""

from __future__ import annotations

import resource
import sys
from dataclasses import asdict, dataclass
from typing import Any

import torch

from cudalint.runtime.smoke.crash import Crash
from cudalint.runtime.smoke.report import Check, Status
from cudalint.runtime.smoke.target import Target, parameters, run_target

NAME = "batch-ramp"
_MIB = 1024 * 1024


@dataclass(frozen=True)
class BatchRun:
    batch_size: int
    status: str  # "ok", "out-of-memory" or "crash"
    seconds: float
    peak_memory: int | None  # bytes
    memory_kind: str
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def batch_ramp(target: Target, device: torch.device,
               sizes: tuple[int, ...]) -> tuple[Check, list[BatchRun]]:
    if "batch_size" not in parameters(target):
        return Check(NAME, Status.SKIPPED, f"{target.spec.function} takes no batch_size "
                     "parameter"), []
    runs: list[BatchRun] = []
    for size in sorted(sizes):
        run = _run_one(target, device, size)
        runs.append(run)
        if run.status != "ok":
            break
    return _verdict(runs, sizes), runs


def _run_one(target: Target, device: torch.device, size: int) -> BatchRun:
    reset_peak(device)
    outcome = run_target(target, device, {"batch_size": size})
    synchronize(device)
    memory, kind = peak_memory(device)
    if outcome.crash is None:
        return BatchRun(size, "ok", outcome.seconds, memory, kind)
    status = "out-of-memory" if is_out_of_memory(outcome.crash) else "crash"
    return BatchRun(size, status, outcome.seconds, memory, kind, outcome.crash.summary())


def _verdict(runs: list[BatchRun], sizes: tuple[int, ...]) -> Check:
    fits = [run for run in runs if run.status == "ok"]
    table = "; ".join(_describe(run) for run in runs)
    last = runs[-1]
    if last.status == "crash":
        return Check(NAME, Status.FAIL, f"batch size {last.batch_size} crashed: {last.error}; "
                     f"{table}")
    if not fits:
        return Check(NAME, Status.FAIL, f"no batch size fits: {table}")
    largest = fits[-1].batch_size
    if last.status == "out-of-memory":
        return Check(NAME, Status.WARN, f"largest batch size that fits: {largest}; "
                     f"{last.batch_size} ran out of memory; {table}")
    return Check(NAME, Status.PASS, f"every batch size fits ({', '.join(map(str, sorted(sizes)))}"
                 f"), largest {largest}; {table}")


def _describe(run: BatchRun) -> str:
    memory = f", {run.peak_memory / _MIB:.1f} MiB {run.memory_kind}" \
        if run.peak_memory is not None else ""
    return f"{run.batch_size}: {run.status} in {run.seconds:.3f}s{memory}"


def is_out_of_memory(crash: Crash) -> bool:
    return crash.error_type == "OutOfMemoryError" or "out of memory" in crash.message.lower()


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    elif device.type == "mps":
        torch.mps.empty_cache()


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def peak_memory(device: torch.device) -> tuple[int | None, str]:
    """(bytes, what was measured)."""
    if device.type == "mps":
        return int(torch.mps.driver_allocated_memory()), "MPS driver allocated"
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device)), "CUDA peak allocated"
    return _peak_rss(), "CPU peak RSS of the process"


def _peak_rss() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux gives kilobytes, macOS bytes.
    return int(peak if sys.platform == "darwin" else peak * 1024)

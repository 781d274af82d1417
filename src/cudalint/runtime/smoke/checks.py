"""The checks that need torch: transfer, reference comparison, determinism, checkpoint."""

from __future__ import annotations

import cmath
import tempfile
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

from cudalint.runtime.smoke.artefacts import Artefact
from cudalint.runtime.smoke.compare import (
    EXACT,
    Difference,
    Tolerance,
    compare_outputs,
    dtype_name,
    summarize,
)
from cudalint.runtime.smoke.outputs import Leaf, UnsupportedOutput, child_path, flatten
from cudalint.runtime.smoke.report import Check, Status
from cudalint.runtime.smoke.target import Target, run_target


def transfer_check(device: torch.device) -> Check:
    """A small tensor to the device and back, and a matmul there, compared with CPU."""
    host = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 7
    try:
        moved = host.to(device)
        product = (moved @ moved.T).to("cpu")
        back = moved.to("cpu")
    except Exception as exc:
        return Check("transfer", Status.FAIL, f"{type(exc).__name__}: {_first_line(exc)}")
    expected = [Leaf("round trip", host), Leaf("matmul", host @ host.T)]
    problems = compare_outputs([Leaf("round trip", back), Leaf("matmul", product)], expected,
                               Tolerance())
    if problems:
        return Check("transfer", Status.FAIL, summarize(problems))
    return Check("transfer", Status.PASS,
                 f"float32 3x4 to {device} and back is exact; matmul on {device} matches CPU")


def reference_check(leaves: list[Leaf], expected: list[Leaf], tolerance: Tolerance,
                    origin: str) -> Check:
    problems = compare_outputs(leaves, expected, tolerance)
    if problems:
        return Check("compare", Status.FAIL,
                     f"{len(problems)} difference(s) from {origin}: {summarize(problems)}")
    largest = _largest(compare_outputs(leaves, expected, EXACT), leaves, expected, tolerance)
    return Check("compare", Status.PASS,
                 f"all {len(leaves)} outputs match {origin} within tolerance; {largest}")


def _largest(differences: list[Difference], leaves: list[Leaf], expected: list[Leaf],
             tolerance: Tolerance) -> str:
    """The largest difference, and the most its output's tolerance allows anywhere in it
    (atol + rtol * its largest finite |reference|): a report reading a pass whose difference
    is above that knows it was not written by this check."""
    sized = [d for d in differences if d.max_abs is not None]
    if not sized:
        return "identical"
    worst = max(sized, key=lambda d: d.max_abs or 0.0)
    text = f"largest abs diff {worst.max_abs:.3g} ({worst.path})"
    got = next((leaf.value for leaf in leaves if leaf.path == worst.path), None)
    want = next((leaf.value for leaf in expected if leaf.path == worst.path), None)
    allowed = _allowed(got, want, tolerance.for_path(worst.path))
    return text if allowed is None else f"{text}, at most {allowed:.3g} allowed there"


def _allowed(got: Any, want: Any, tolerance: Tolerance) -> float | None:
    if isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor):
        rtol, atol = tolerance.for_dtypes(dtype_name(got), dtype_name(want))
        magnitude = want.detach().to("cpu").abs().to(torch.float64)
        finite = magnitude[torch.isfinite(magnitude)]
        return atol + rtol * (float(finite.max()) if finite.numel() else 0.0)
    if isinstance(want, (int, float, complex)) and not isinstance(want, bool):
        rtol, atol = tolerance.for_dtypes("complex128" if isinstance(want, complex)
                                          else "float64")
        return atol + rtol * abs(want) if cmath.isfinite(want) else None
    return None


@dataclass(frozen=True)
class RunFailure:
    """Why a second run of the target gave nothing to compare."""

    crashed: bool
    detail: str

    def after(self, subject: str) -> str:
        return f"{subject} crashed: {self.detail}" if self.crashed else f"{subject}: {self.detail}"


def rerun(target: Target, device: torch.device,
          files: list[Artefact] | None = None) -> list[Leaf] | RunFailure:
    """Run the target again (a repeat, the CPU reference): its output leaves, or why none; the
    files its output names go to `files`."""
    outcome = run_target(target, device)
    if outcome.crash is not None:
        return RunFailure(True, outcome.crash.summary())
    try:
        return flatten(outcome.output, files)
    except UnsupportedOutput as exc:
        return RunFailure(False, str(exc))


def determinism_check(target: Target, device: torch.device, first: list[Leaf], repeats: int,
                      tolerance: Tolerance) -> Check:
    """Run again with the same seed: identical (pass), close (warn) or different (fail)."""
    if repeats <= 0:
        return Check("determinism", Status.SKIPPED,
                     "pass --repeat N to run the target again with the same seed")
    inexact: list[Difference] = []
    for run in range(1, repeats + 1):
        leaves = rerun(target, device)
        if isinstance(leaves, RunFailure):
            return Check("determinism", Status.FAIL, leaves.after(f"repeat {run}"))
        if far := compare_outputs(leaves, first, tolerance):
            return Check("determinism", Status.FAIL,
                         f"repeat {run} with the same seed differs: {summarize(far)}")
        inexact = inexact or compare_outputs(leaves, first, EXACT)
    if inexact:
        return Check("determinism", Status.WARN,
                     f"{repeats} repeat(s) with the same seed agree within tolerance but are not "
                     f"bitwise identical: {summarize(inexact, limit=3)}")
    return Check("determinism", Status.PASS,
                 f"{repeats} repeat(s) with the same seed gave bitwise-identical outputs")


def checkpoint_check(output: Any) -> Check:
    """Save the returned modules and state_dicts with torch.save and load them back on CPU
    with weights_only=True, as a Mac loads a checkpoint from the CUDA server."""
    parts: dict[str, Any] = {}
    _collect_checkpoints(output, "", parts)
    if not parts:
        return Check("checkpoint", Status.SKIPPED,
                     "the target returned no nn.Module, state_dict or optimizer state")
    try:
        loaded = _round_trip(parts)
    except Exception as exc:
        return Check("checkpoint", Status.FAIL,
                     f"torch.save then torch.load(map_location='cpu', weights_only=True) failed: "
                     f"{type(exc).__name__}: {_first_line(exc)}")
    elsewhere = sorted({t.device.type for t in tree_leaves(loaded)
                        if isinstance(t, torch.Tensor) and t.device.type != "cpu"})
    if elsewhere:
        return Check("checkpoint", Status.FAIL, f"loaded tensors on {', '.join(elsewhere)}")
    problems = compare_outputs(flatten(loaded), flatten(parts), EXACT)
    if problems:
        return Check("checkpoint", Status.FAIL, f"reloaded values differ: {summarize(problems)}")
    return Check("checkpoint", Status.PASS,
                 f"{', '.join(parts)}: saved, reloaded on CPU with weights_only=True, identical")


def _collect_checkpoints(value: Any, path: str, parts: dict[str, Any]) -> None:
    if isinstance(value, torch.nn.Module):
        parts[path or "state_dict"] = value.state_dict()
    elif isinstance(value, Mapping) and _is_state(value):
        parts[path or "state_dict"] = value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _collect_checkpoints(item, child_path(path, key), parts)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _collect_checkpoints(item, f"{path or 'output'}[{index}]", parts)


def _is_state(value: Mapping[Any, Any]) -> bool:
    """A module's state_dict (an OrderedDict of tensors) or an optimizer's (state and
    param_groups); a plain dict of outputs is not one."""
    if {"state", "param_groups"} <= set(value):
        return True
    tensors_only = all(isinstance(item, torch.Tensor) for item in value.values())
    return isinstance(value, OrderedDict) and bool(value) and tensors_only


def _round_trip(parts: dict[str, Any]) -> Any:
    with tempfile.TemporaryDirectory(prefix="cudalint-smoke-") as folder:
        path = Path(folder) / "checkpoint.pt"
        torch.save(parts, path)
        return torch.load(path, map_location="cpu", weights_only=True)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""

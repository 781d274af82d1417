"""Where a cold check's CPU seconds go, phase by phase, each as a ratio to ruff's CPU seconds
on the same tree in the same run (issue 46: profile before optimising).

    python benchmarks/bench_phases.py [--target DIR] [--jobs N]

It runs `cudalint check --no-cache` in this process (its workers are forked from it, so they
inherit the timers) with a CPU-time timer around each phase of a Python file's check
(cudalint.engine.lint.python): the first pass's term search (`Prefilter.within`), Python's
own parse of the file (`ast`, lazily), the choice of what LibCST need not read
(`hidden_parts`), LibCST's parse of the rest, the rules' walk, and the findings' positions;
and the footer's fix simulation (cudalint.engine.checkers.python). Each worker writes its
totals after each file; the figures are their sums. `ruff check --select ALL --no-cache` is
timed on the same tree first, as `bench_speed.py` times it.

Each phase is counted alone: a phase called inside another (the simulation lints the file
again) is taken off the outer one's time. "other lint work" is the rest of a Python file's
lint (the outline, depth checks, the results); "rest of the workers" their time outside any
lint (reading files, the other kinds of files, the pool, the findings sent back); "parent
process" the main process (discovery, printing). A phase renamed in the engine stops this
script with a one-line error.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_speed import _default_target, _run, _warm

# (module, attribute, label): what is timed, outermost first.
PHASES = (
    ("cudalint.engine.first_pass.prefilter", "Prefilter.within", "term search (all files)"),
    ("cudalint.engine.lint.python", "_compiled", "Python's parse (ast, lazy)"),
    ("cudalint.engine.lint.python", "_hidden", "what LibCST need not read"),
    ("cudalint.engine.lint.python", "_parse_cst", "LibCST's parse"),
    ("cudalint.engine.lint.python", "walk", "the rules' walk"),
    ("cudalint.engine.lint.python", "_positioned", "positions, noqa, messages"),
    ("cudalint.engine.checkers.python", "_fixed", "fix simulation (the footer)"),
)
_OUTER = ("cudalint.engine.lint.python", "lint_python", "lint_python")


class Timers:
    """Each label's own CPU seconds in this process: a phase called inside another is taken
    off the outer one's time (the fix simulation lints the file again: those phases count
    as their own, the rest as the simulation's)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.seconds: dict[str, float] = {}
        self.stack: list[list[float]] = []  # per running phase: [start, time in inner ones]
        self.files = 0
        self.wrapped: list[tuple[Any, str, Any]] = []  # (owner, name, what was there)

    def wrap(self, owner: Any, name: str, label: str) -> None:
        function = getattr(owner, name)

        def timed(*args: object, **kwargs: object) -> object:
            self.stack.append([time.process_time(), 0.0])
            try:
                return function(*args, **kwargs)
            finally:
                start, inner = self.stack.pop()
                elapsed = time.process_time() - start
                self.seconds[label] = self.seconds.get(label, 0.0) + elapsed - inner
                if self.stack:
                    self.stack[-1][1] += elapsed
                if label == _OUTER[2] and not self.stack:
                    self.files += 1
                    self.save()

        self.wrapped.append((owner, name, function))
        setattr(owner, name, timed)

    def uninstall(self) -> None:
        """Put back what `wrap` replaced (its folder is gone after the run)."""
        for owner, name, function in reversed(self.wrapped):
            setattr(owner, name, function)
        self.wrapped.clear()

    def save(self) -> None:
        """This process's totals so far (a forked worker ends without running atexit)."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        record = {"phases": self.seconds, "cpu": usage.ru_utime + usage.ru_stime,
                  "files": self.files}
        (self.folder / f"{os.getpid()}.json").write_text(json.dumps(record))


def _resolve(module: str, dotted: str) -> tuple[Any, str]:
    owner: Any = importlib.import_module(module)
    *path, name = dotted.split(".")
    for part in path:
        owner = getattr(owner, part)
    if not hasattr(owner, name):
        raise SystemExit(f"bench_phases: {module}.{dotted} is gone; update PHASES")
    return owner, name


def install(folder: Path) -> Timers:
    timers = Timers(folder)
    for module, dotted, label in (*PHASES, _OUTER):
        owner, name = _resolve(module, dotted)
        timers.wrap(owner, name, label)
    return timers


def ruff_cpu(target: Path) -> float | None:
    """ruff's CPU seconds on `target`, timed as bench_speed.py times it (after a run untimed)."""
    ruff = shutil.which("ruff")
    if ruff is None:
        return None
    command = [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "--quiet",
               str(target)]
    _warm(command)
    return _run(command)[1]


def check_quietly(target: Path, jobs: int) -> None:
    """A cold check of `target` in this process (its workers forked from it), its output
    dropped."""
    from cudalint.cli import main

    with open(os.devnull, "w") as quiet:
        stdout, sys.stdout = sys.stdout, quiet
        try:
            main(["check", "--no-cache", "--exit-zero", "-j", str(jobs),
                  "--output-format", "concise", str(target)])
        finally:
            sys.stdout = stdout


def measure(target: Path, jobs: int) -> dict[str, Any]:
    """The phases' CPU seconds of a cold check of `target`, summed over the workers."""
    with tempfile.TemporaryDirectory(prefix="bench_phases_") as folder:
        timers = install(Path(folder))
        start = resource.getrusage(resource.RUSAGE_SELF)
        try:
            check_quietly(target, jobs)
        finally:
            timers.uninstall()
        end = resource.getrusage(resource.RUSAGE_SELF)
        parent = (end.ru_utime - start.ru_utime) + (end.ru_stime - start.ru_stime)
        workers = [json.loads(path.read_text()) for path in Path(folder).glob("*.json")
                   if path.stem != str(os.getpid())]
        if not workers:  # checked in this process
            workers = [{"phases": timers.seconds, "cpu": parent, "files": timers.files}]
            parent = 0.0
    phases: dict[str, float] = {}
    for worker in workers:
        for label, seconds in worker["phases"].items():
            phases[label] = phases.get(label, 0.0) + seconds
    return {"phases": phases, "workers": sum(w["cpu"] for w in workers), "parent": parent,
            "files": sum(w["files"] for w in workers)}


def _rows(phases: dict[str, float]) -> dict[str, float]:
    rows = {label: phases.get(label, 0.0) for _, _, label in PHASES}
    rows["other lint work"] = phases.get(_OUTER[2], 0.0)
    return rows


def target_and_jobs(script: str, description: str) -> tuple[Path, int] | None:
    """The tree to check and the number of workers, from the command line (None, with a
    line on stderr: no tree)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--target", type=Path, default=None, help="default: the torch package")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    args = parser.parse_args()
    target = args.target or _default_target()
    if target is None or not target.is_dir():
        print(f"{script}: no target (install torch, or give --target DIR)", file=sys.stderr)
        return None
    return target, args.jobs


def timed(target: Path, jobs: int) -> tuple[float | None, dict[str, float], float, int]:
    """ruff's CPU seconds on `target` (None: no ruff), then a cold check's: each phase's
    (`rows`, the rest of the workers and the parent process among them), all of them, and
    the number of Python files linted."""
    reference = ruff_cpu(target)
    found = measure(target, jobs)
    total = found["workers"] + found["parent"]
    rows = _rows(found["phases"])
    accounted = sum(rows.values())
    rows["rest of the workers"] = max(found["workers"] - accounted, 0.0)
    rows["parent process"] = found["parent"]
    return reference, rows, total, found["files"]


def main() -> int:
    chosen = target_and_jobs("bench_phases", __doc__.splitlines()[0])
    if chosen is None:
        return 2
    target, jobs = chosen
    reference, rows, total, files = timed(target, jobs)
    print(f"cold check of {target} ({files} Python files linted; "
          f"load average {os.getloadavg()[0]:.1f})")
    label = "ruff CPU s" if reference else "ruff: not installed"
    print(f"{'phase':36} {'CPU s':>7} {'share':>6} {'/ ' + label:>16}")
    for name, seconds in rows.items():
        print(f"{name:36} {seconds:7.2f} {seconds / total:6.1%} {ratio(seconds, reference):>16}")
    print(f"{'all':36} {total:7.2f} {1:6.1%} {ratio(total, reference):>16}")
    return footer(reference)


def ratio(seconds: float, reference: float | None) -> str:
    return f"{seconds / reference:.2f}x" if reference else "-"


def footer(reference: float | None) -> int:
    """The reference's line, and the exit status."""
    if reference:
        print(f"ruff check --select ALL --no-cache: {reference:.2f} CPU s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What was and was not tested: the guides' five questions, one column per device.

Each question is answered by smoke checks (`cudalint smoke`'s check names):

| question | checks |
|---|---|
| the weights load | `checkpoint` (saved, reloaded on the CPU with `weights_only=True`) |
| inference gives output | `run` (the target ran and returned outputs) |
| training updates the weights | `training` (non-zero gradients, weights change, loss goes down) |
| resume after a save works | `interrupted`, `killed` (`--interrupt N`, `--kill-after N`) |
| metrics reproduce | `compare` (outputs within tolerance of a reference or of the CPU) |

The columns are CPU, MPS and the CUDA reference (the outputs a run compared with, saved on a
CUDA machine), plus CUDA when a run ran there. Only runs that describe the project as it is
now count; a cell is *pass*, *fail* or *not run*, with the runs' files and tolerance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cudalint.report.evidence import SmokeRun

QUESTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("the weights load", ("checkpoint",)),
    ("inference gives output", ("run",)),
    ("training updates the weights", ("training",)),
    ("resume after a save works", ("interrupted", "killed")),
    ("metrics reproduce", ("compare",)),
)
COLUMNS = ("cpu", "mps", "cuda-reference")
LABELS = {"cpu": "CPU", "mps": "MPS", "cuda": "CUDA", "cuda-reference": "CUDA reference"}
PASS, FAIL, NOT_RUN = "pass", "fail", "not run"
_NO_CHECK = "no smoke check tests this yet"


@dataclass(frozen=True)
class Cell:
    status: str  # pass, fail, not run
    sources: tuple[str, ...] = ()  # the smoke files that answer it
    tolerance: str | None = None
    detail: str = ""

    def text(self) -> str:
        """The cell in one line: status, files, tolerance."""
        parts = [self.status]
        if self.sources:
            parts.append(", ".join(self.sources))
        if self.tolerance:
            parts.append(self.tolerance)
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "sources": list(self.sources),
                "tolerance": self.tolerance, "detail": self.detail}


@dataclass(frozen=True)
class Row:
    question: str
    checks: tuple[str, ...]
    cells: dict[str, Cell]

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "checks": list(self.checks),
                "cells": {column: cell.to_dict() for column, cell in self.cells.items()}}


@dataclass(frozen=True)
class Tested:
    columns: tuple[str, ...]
    rows: tuple[Row, ...]

    @property
    def labels(self) -> list[str]:
        return [LABELS.get(column, column) for column in self.columns]

    def to_dict(self) -> dict[str, Any]:
        return {"columns": {column: LABELS.get(column, column) for column in self.columns},
                "rows": [row.to_dict() for row in self.rows]}


def what_was_tested(runs: Sequence[SmokeRun]) -> Tested:
    """The table for the current runs (stale ones are left out: they give no evidence)."""
    runs = [run for run in runs if run.current]
    columns = list(COLUMNS)
    if any(run.device == "cuda" for run in runs):
        columns.insert(2, "cuda")
    rows = []
    for question, checks in QUESTIONS:
        cells = {column: _device_cell(checks, [r for r in runs if r.device == column])
                 for column in columns if column != "cuda-reference"}
        cells["cuda-reference"] = _reference_cell(checks, runs)
        rows.append(Row(question, checks, {column: cells[column] for column in columns}))
    return Tested(tuple(columns), tuple(rows))


def _device_cell(checks: tuple[str, ...], runs: list[SmokeRun]) -> Cell:
    if not checks:
        return Cell(NOT_RUN, detail=_NO_CHECK)
    answered = [(run, check) for run in runs for check in checks
                if run.statuses.get(check) in ("pass", "warn", "fail")]
    if not answered:
        if not runs:
            return Cell(NOT_RUN, detail="no smoke run on this device")
        skipped = [_skipped(run, check) for run in runs for check in checks
                   if check in run.details]
        skipped.sort(key=lambda text: not text.startswith("requested"))
        return Cell(NOT_RUN, tuple(run.source for run in runs),
                    detail=skipped[0] if skipped else f"no `{checks[0]}` check in the run")
    failed = [(run, check) for run, check in answered if run.statuses[check] == "fail"]
    chosen = failed or answered
    run, check = chosen[0]
    sources = tuple(dict.fromkeys(r.source for r, _ in chosen))
    return Cell(FAIL if failed else PASS, sources, run.tolerance_text, run.details[check])


def _skipped(run: SmokeRun, check: str) -> str:
    """Why a check did not run; first, that it was asked for (`--kill-after 1`)."""
    if check in run.requested:
        return f"requested ({run.requested[check]}) and not run: {run.details[check]}"
    return run.details[check]


def _reference_cell(checks: tuple[str, ...], runs: list[SmokeRun]) -> Cell:
    """A reference saved on CUDA: its run gave outputs; whether metrics reproduce is what each
    run that compared with it found."""
    compared = [(run, comparison) for run in runs
                if (comparison := run.comparison()) is not None
                and comparison.against == "reference" and comparison.device == "cuda"]
    if not compared:
        return Cell(NOT_RUN, detail="no run compared with a reference saved on CUDA")
    if "run" in checks:
        comparison = compared[0][1]
        return Cell(PASS, tuple(dict.fromkeys(run.source for run, _ in compared)),
                    detail=f"outputs saved on {comparison.reference}")
    if "training" in checks:
        return _reference_training(compared)
    if "compare" in checks:
        failed = [(run, c) for run, c in compared if c.status == "fail"]
        chosen = failed or compared
        run, comparison = chosen[0]
        return Cell(FAIL if failed else PASS, tuple(dict.fromkeys(r.source for r, _ in chosen)),
                    run.tolerance_text,
                    f"{run.device} against {comparison.reference}: largest abs diff "
                    f"{comparison.difference}")
    return Cell(NOT_RUN, detail=_NO_CHECK if not checks else "a reference holds outputs only")


def _reference_training(compared: list[tuple[SmokeRun, Any]]) -> Cell:
    """Training against a reference that carries its per-step losses: the run's training check,
    which compared its losses with them."""
    carried = [run for run, _ in compared
               if run.training.get("reference_losses") and run.statuses.get("training")
               in ("pass", "warn", "fail")]
    if not carried:
        return Cell(NOT_RUN, detail="the reference carries no per-step losses (saved before "
                                    "cudalint 0.3, or by a target that trains nothing)")
    failed = [run for run in carried if run.statuses["training"] == "fail"]
    chosen = failed or carried
    return Cell(FAIL if failed else PASS, tuple(dict.fromkeys(run.source for run in chosen)),
                chosen[0].tolerance_text, chosen[0].details["training"])

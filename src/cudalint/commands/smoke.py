"""`cudalint smoke`: the harness (`cudalint.runtime.smoke.command`), handed the static check it
sits below: the CUD6 findings (MPS hazards) in the files a run used, each with its file:line,
which the report joins to the hazards the run predicted."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cudalint.runtime.smoke.static import StaticFinding

_CODES = ["CUD6"]


def main(argv: Sequence[str] | None = None) -> int:
    from cudalint.runtime.smoke.command import main as smoke

    return smoke(argv, static=mps_hazards)


def mps_hazards(root: Path, files: list[Path]) -> list[StaticFinding]:
    """The CUD6 findings in `files`, with the project's configuration (`--select CUD6` over
    it), each at its file:line from `root`."""
    from cudalint import rules as registry
    from cudalint.config import load_config
    from cudalint.engine.running.runner import RunOptions, run

    python = [path for path in files if path.suffix == ".py" and path.is_file()]
    if not python:
        return []
    reports = run(python, load_config(root), RunOptions(jobs=1, select=list(_CODES)),
                  registry=registry)
    found = []
    for report in reports:
        for finding in report.findings:
            if finding.code and finding.code.startswith("CUD6"):
                where = f"{_relative(finding.path, root)}:{finding.location.row}"
                found.append(StaticFinding(finding.code, where, finding.message))
    return found


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()

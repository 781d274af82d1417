"""`--output-format gitlab`: a GitLab Code Quality report (a JSON list of issues).

A fingerprint must stay the same while the code around a finding moves, so that GitLab shows
only what a merge request adds: it hashes the path (relative to the project root), the code
and the text of the offending line, and counts repeats of the same three, never the row.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cudalint.engine.checkers.job import FileReport
from cudalint.finding import Finding, Severity
from cudalint.output.common import message

# GitLab's levels are info, minor, major, critical, blocker.
_SEVERITY = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "info"}


def report_root(project_root: Path) -> Path:
    """GitLab shows paths relative to the checkout: CI_PROJECT_DIR in a job, else the project."""
    return Path(os.environ.get("CI_PROJECT_DIR") or project_root).resolve()


def _relative(path: Path, root: Path) -> str:
    full = Path(os.path.abspath(path))
    try:
        return full.relative_to(root).as_posix()
    except ValueError:
        return full.as_posix()


def _line(report: FileReport, finding: Finding) -> str:
    """The offending line's text; for a notebook cell (rows count within the cell) the message."""
    lines = (report.text or "").splitlines()
    if finding.cell is None and 1 <= finding.location.row <= len(lines):
        return lines[finding.location.row - 1].strip()
    return f"cell {finding.cell}: {finding.message}"


def issues(reports: Sequence[FileReport], root: Path) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for report in sorted(reports, key=lambda r: str(r.path)):
        path = _relative(report.path, root)
        seen: Counter[tuple[str, str]] = Counter()
        for finding in sorted(report.findings, key=Finding.sort_key):
            code = finding.code or "syntax-error"
            key = (code, _line(report, finding))
            seen[key] += 1
            text = "\0".join([path, *key, str(seen[key])])
            found.append({
                "type": "issue",
                "check_name": code,
                "description": f"{code} {message(finding)}",
                "categories": ["Compatibility"],
                "severity": _SEVERITY[finding.severity],
                "fingerprint": hashlib.md5(text.encode(), usedforsecurity=False).hexdigest(),
                "location": {"path": path, "lines": {"begin": finding.location.row,
                                                     "end": finding.end_location.row}},
            })
    return found


def render(reports: Sequence[FileReport], project_root: Path) -> str:
    return json.dumps(issues(reports, report_root(project_root)), indent=2) + "\n"

"""`--output-format json`: a list of objects with ruff's keys, plus severity, guarded, category."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from cudalint.engine.checkers.job import FileReport
from cudalint.finding import Finding, Position, rule_url
from cudalint.output.common import sorted_findings
from cudalint.output.paths import absolute


def _position(position: Position) -> dict[str, int]:
    return {"row": position.row, "column": position.column}


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    fix = None
    if finding.fix is not None:
        fix = {
            "applicability": finding.fix.applicability.value,
            "message": finding.fix.message,
            "edits": [
                {
                    "content": edit.content,
                    "location": _position(edit.location),
                    "end_location": _position(edit.end_location),
                }
                for edit in finding.fix.edits
            ],
        }
    return {
        "code": finding.code,
        "message": finding.message,
        "filename": absolute(finding.path),
        "location": _position(finding.location),
        "end_location": _position(finding.end_location),
        "fix": fix,
        "noqa_row": finding.location.row,
        "cell": finding.cell,
        "severity": str(finding.severity),
        "guarded": finding.guarded,
        "category": finding.category.value,
        "url": rule_url(finding.code) if finding.code else None,
    }


def render(reports: Sequence[FileReport]) -> str:
    return json.dumps([finding_to_dict(f) for f in sorted_findings(reports)], indent=2) + "\n"

"""`--output-format sarif`: SARIF 2.1.0, for code-scanning dashboards."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cudalint import __version__
from cudalint.engine.checkers.job import FileReport
from cudalint.finding import Finding, Severity
from cudalint.output.common import message, sorted_findings
from cudalint.rules import primary_rules

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# The ruleId of a file's own error line (a syntax error, an unreadable file), as every format
# names it: SARIF requires a string, and code scanning groups alerts by it.
FILE_ERROR = "syntax-error"
_FILE_ERROR_RULE = {
    "id": FILE_ERROR,
    "name": FILE_ERROR,
    "shortDescription": {"text": "A file that could not be read or parsed, so was not checked"},
    "defaultConfiguration": {"level": "error"},
}


def _rules() -> list[dict[str, Any]]:
    return [_FILE_ERROR_RULE, *(
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.message},
            "fullDescription": {"text": rule.doc()},
            "helpUri": rule.url(),
            "defaultConfiguration": {"level": _LEVEL[rule.severity]},
            "properties": {"severities": [str(s) for s in rule.severities()]},
        }
        for rule in primary_rules()
    )]


def _result(finding: Finding) -> dict[str, Any]:
    region = {
        "startLine": finding.location.row,
        "startColumn": finding.location.column,
        "endLine": finding.end_location.row,
        "endColumn": finding.end_location.column,
    }
    return {
        "ruleId": finding.code or FILE_ERROR,
        "level": _LEVEL[finding.severity],
        "message": {"text": message(finding)},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": Path(finding.path).resolve().as_uri()},
                    "region": region,
                }
            }
        ],
        "properties": {"guarded": finding.guarded, "category": finding.category.value},
    }


def render(reports: Sequence[FileReport]) -> str:
    findings = sorted_findings(reports)
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "cudalint",
                        "version": __version__,
                        "informationUri": "https://github.com/cudalint/cudalint",
                        "rules": _rules(),
                    }
                },
                "results": [_result(f) for f in findings],
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"

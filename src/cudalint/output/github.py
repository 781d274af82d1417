"""`--output-format github`: workflow commands that annotate a pull request."""

from __future__ import annotations

from collections.abc import Sequence

from cudalint.engine.checkers.job import FileReport
from cudalint.finding import Finding, Severity
from cudalint.output.common import message, sorted_findings
from cudalint.output.paths import display_path

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _escape(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(value: str) -> str:
    return _escape(value).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    path = display_path(finding.path)
    code = finding.code or "syntax-error"
    where = (
        f"file={_property(path)},line={finding.location.row},col={finding.location.column},"
        f"endLine={finding.end_location.row},endColumn={finding.end_location.column}"
    )
    text = f"{path}:{finding.location.row}:{finding.location.column}: {code} {message(finding)}"
    return f"::{_LEVEL[finding.severity]} title=cudalint ({code}),{where}::{_escape(text)}"


def render(reports: Sequence[FileReport]) -> str:
    return "".join(annotation(f) + "\n" for f in sorted_findings(reports))

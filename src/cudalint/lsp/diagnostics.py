"""Findings as LSP diagnostics. A diagnostic's `data` holds what its code actions apply: the
fix's text edits and the noqa edit, already in the client's positions."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter

from cudalint.finding import Applicability, Edit, Finding, Severity
from cudalint.lsp.positions import to_lsp_range
from cudalint.lsp.suppress import Noqa
from cudalint.rules import rule_by_code

SOURCE = "cudalint"
CONVERTER = get_converter()
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


def to_diagnostic(
    finding: Finding, noqa: Noqa, encoding: str, version: int | None = None, *,
    actions: bool = True,
) -> types.Diagnostic:
    """`finding` of the text `noqa` holds, at that text's `version` (kept in `data`, so that a
    code action can tell a diagnostic of an older version). Without `actions`, `data` names
    the fix (title, applicability) but holds no edits: those are made when an action is
    asked for."""
    rule = rule_by_code(finding.code) if finding.code else None
    lines = noqa.lines
    return types.Diagnostic(
        range=to_lsp_range(lines, finding.location, finding.end_location, encoding),
        message=finding.message + (" (guarded)" if finding.guarded else ""),
        severity=_SEVERITY[finding.severity],
        code=finding.code,
        code_description=types.CodeDescription(href=rule.url()) if rule else None,
        source=SOURCE,
        data={
            "version": version,
            "category": finding.category.value,
            "guarded": finding.guarded,
            "fix": _fix_data(finding, lines, encoding, actions=actions),
            "noqa": _noqa_data(finding, noqa, encoding) if actions else None,
        },
    )


def message_diagnostic(message: str) -> types.Diagnostic:
    """A problem with the whole file (a bad configuration, an internal error), on its first line."""
    start = types.Position(line=0, character=0)
    return types.Diagnostic(range=types.Range(start=start, end=start), message=message,
                            severity=types.DiagnosticSeverity.Error, source=SOURCE)


def text_edits(edits: list[Edit], lines: list[str], encoding: str) -> list[types.TextEdit]:
    """Engine edits as LSP text edits, sorted; an empty list when two of them overlap."""
    converted = sorted(
        (types.TextEdit(range=to_lsp_range(lines, e.location, e.end_location, encoding),
                        new_text=e.content) for e in edits),
        key=lambda e: (_key(e.range.start), _key(e.range.end)),
    )
    for before, after in pairwise(converted):
        if _key(before.range.end) > _key(after.range.start):
            return []
    return converted


def edits_of(data: dict[str, Any]) -> list[types.TextEdit]:
    """The text edits stored in a diagnostic's `data` by `to_diagnostic`."""
    return [CONVERTER.structure(edit, types.TextEdit) for edit in data["edits"]]


def _fix_data(finding: Finding, lines: list[str], encoding: str, *,
              actions: bool) -> dict[str, Any] | None:
    fix = finding.fix
    if fix is None:
        return None
    unsafe = fix.applicability is Applicability.UNSAFE
    named = {
        "title": f"Fix {finding.code}: {fix.message}" + (" (unsafe)" if unsafe else ""),
        "applicability": fix.applicability.value,
    }
    if not actions:
        return named
    edits = text_edits(list(fix.edits), lines, encoding)
    return {**named, "edits": _unstructure(edits)} if edits else None


def _noqa_data(finding: Finding, noqa: Noqa, encoding: str) -> dict[str, Any] | None:
    edit = noqa.edit(finding)
    if edit is None:
        return None
    return {
        "title": f"Disable {finding.code} for this line",
        "edits": _unstructure(text_edits([edit], noqa.lines, encoding)),
    }


def _unstructure(edits: list[types.TextEdit]) -> list[dict[str, Any]]:
    return [CONVERTER.unstructure(edit, types.TextEdit) for edit in edits]


def _key(position: types.Position) -> tuple[int, int]:
    return position.line, position.character


def data_version(diagnostic: types.Diagnostic) -> int | None:
    """The document version a diagnostic was made for (None: not one of ours, or unknown)."""
    data = diagnostic.data
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, int) else None

"""Findings as the JSON the protocol carries (LSP's field names, 0-based positions counted in
the negotiated encoding's code units), made without lsprotocol: the server publishes its first
diagnostics before it loads pygls and lsprotocol (lsp/opening.py). lsp/diagnostics.py builds
lsprotocol's objects from these forms, so both say the same by construction."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from cudalint.finding import Applicability, Edit, Finding, Position, Severity
from cudalint.lsp.lines import code_units
from cudalint.lsp.suppress import Noqa
from cudalint.rules import rule_by_code

Form = dict[str, Any]
SOURCE = "cudalint"
# LSP's DiagnosticSeverity.
SEVERITY = {Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 3}

def position(lines: list[str], where: Position, encoding: str) -> Form:
    """A 1-based row and code-point column as an LSP position; past the end clamps to the end."""
    line = where.row - 1
    if line >= len(lines):
        return end_position(lines, encoding)
    text = lines[max(line, 0)]
    column = min(max(where.column - 1, 0), len(text))
    return {"line": max(line, 0), "character": code_units(text[:column], encoding)}


def end_position(lines: list[str], encoding: str) -> Form:
    """The position after the document's last character."""
    return {"line": len(lines) - 1, "character": code_units(lines[-1], encoding)}


def range_form(lines: list[str], start: Position, end: Position, encoding: str) -> Form:
    return {"start": position(lines, start, encoding), "end": position(lines, end, encoding)}


def edit_forms(edits: list[Edit], lines: list[str], encoding: str) -> list[Form]:
    """Engine edits as LSP text edits, sorted; an empty list when two of them overlap."""
    made = sorted((_edit_form(e, lines, encoding) for e in edits),
                  key=lambda e: (_key(e["range"]["start"]), _key(e["range"]["end"])))
    for before, after in pairwise(made):
        if _key(before["range"]["end"]) > _key(after["range"]["start"]):
            return []
    return made


def _edit_form(edit: Edit, lines: list[str], encoding: str) -> Form:
    return {"range": range_form(lines, edit.location, edit.end_location, encoding),
            "newText": edit.content}


def diagnostic_form(finding: Finding, noqa: Noqa, encoding: str, version: int | None = None,
                    *, actions: bool = True) -> Form:
    """`finding` of the text `noqa` holds, at that text's `version` (kept in `data`, so that a
    code action can tell a diagnostic of an older version). Without `actions`, `data` names
    the fix (title, applicability) but holds no edits: those are made when an action is
    asked for."""
    rule = rule_by_code(finding.code) if finding.code else None
    lines = noqa.lines
    form: Form = {
        "range": range_form(lines, finding.location, finding.end_location, encoding),
        "message": finding.message + (" (guarded)" if finding.guarded else ""),
        "severity": SEVERITY[finding.severity],
    }
    if finding.code is not None:
        form["code"] = finding.code
    if rule is not None:
        form["codeDescription"] = {"href": rule.url()}
    form["source"] = SOURCE
    form["data"] = {
        "version": version,
        "category": finding.category.value,
        "guarded": finding.guarded,
        "fix": _fix_data(finding, lines, encoding, actions=actions),
        "noqa": _noqa_data(finding, noqa, encoding) if actions else None,
    }
    return form


def _fix_data(finding: Finding, lines: list[str], encoding: str, *,
              actions: bool) -> Form | None:
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
    edits = edit_forms(list(fix.edits), lines, encoding)
    return {**named, "edits": edits} if edits else None


def _noqa_data(finding: Finding, noqa: Noqa, encoding: str) -> Form | None:
    edit = noqa.edit(finding)
    if edit is None:
        return None
    return {
        "title": f"Disable {finding.code} for this line",
        "edits": edit_forms([edit], noqa.lines, encoding),
    }


def _key(where: Form) -> tuple[int, int]:
    return where["line"], where["character"]

"""Findings as LSP diagnostics. A diagnostic's `data` holds what its code actions apply: the
fix's text edits and the noqa edit, already in the client's positions."""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter

from cudalint.finding import Edit, Finding
from cudalint.lsp import forms
from cudalint.lsp.forms import SOURCE
from cudalint.lsp.suppress import Noqa

CONVERTER = get_converter()


def to_diagnostic(
    finding: Finding, noqa: Noqa, encoding: str, version: int | None = None, *,
    actions: bool = True,
) -> types.Diagnostic:
    """`forms.diagnostic_form` as lsprotocol's object."""
    form = forms.diagnostic_form(finding, noqa, encoding, version, actions=actions)
    diagnostic: types.Diagnostic = CONVERTER.structure(form, types.Diagnostic)
    return diagnostic


def message_diagnostic(message: str) -> types.Diagnostic:
    """A problem with the whole file (a bad configuration, an internal error), on its first line."""
    start = types.Position(line=0, character=0)
    return types.Diagnostic(range=types.Range(start=start, end=start), message=message,
                            severity=types.DiagnosticSeverity.Error, source=SOURCE)


def text_edits(edits: list[Edit], lines: list[str], encoding: str) -> list[types.TextEdit]:
    """Engine edits as LSP text edits, sorted; an empty list when two of them overlap."""
    return [CONVERTER.structure(edit, types.TextEdit)
            for edit in forms.edit_forms(edits, lines, encoding)]


def edits_of(data: dict[str, Any]) -> list[types.TextEdit]:
    """The text edits stored in a diagnostic's `data` by `to_diagnostic`."""
    return [CONVERTER.structure(edit, types.TextEdit) for edit in data["edits"]]


def data_version(diagnostic: types.Diagnostic) -> int | None:
    """The document version a diagnostic was made for (None: not one of ours, or unknown)."""
    data = diagnostic.data
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, int) else None

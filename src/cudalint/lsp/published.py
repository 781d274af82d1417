"""The diagnostics the server publishes for each document, kept from one version to the next
with their JSON form. An edit changes a few findings of hundreds: a finding at the same place,
on lines of the same text, converts to the same diagnostic but for its version, and the
event loop's publishing copies its JSON form instead of converting each field again (with
cattrs, a quarter of an edit's time on a 2,000-line file with 250 findings)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import attrs
import cattrs
from lsprotocol import types
from pygls.protocol import default_converter

from cudalint.finding import Finding
from cudalint.lsp.forms import Form, diagnostic_form
from cudalint.lsp.suppress import Noqa

# The JSON form of each diagnostic published lately, by id (the diagnostic is held, so its id
# is not reused while it is here): written on the worker thread, read on the event loop's.
_FORMS: dict[int, tuple[types.Diagnostic, Form]] = {}
_MOST = 200_000


def converter() -> cattrs.Converter:
    """pygls's converter, which writes a diagnostic published lately from its JSON form."""
    made = default_converter()
    plain = made.get_unstructure_hook(types.Diagnostic)

    def unstructure(diagnostic: types.Diagnostic) -> Form:
        return form_of(diagnostic, plain)

    made.register_unstructure_hook(types.Diagnostic, unstructure)
    return made


_CONVERTER = default_converter()


def form_of(diagnostic: types.Diagnostic,
            plain: Callable[[types.Diagnostic], Form] | None = None) -> Form:
    """The JSON form of `diagnostic`: kept, for one published lately, else made by `plain`
    (by default, pygls's converter)."""
    known = _FORMS.get(id(diagnostic))
    if known is not None and known[0] is diagnostic:
        return known[1]
    form: Form = plain(diagnostic) if plain else _CONVERTER.unstructure(diagnostic,
                                                                        types.Diagnostic)
    return form


class Published:
    """The published diagnostics of one document (worker thread only)."""

    def __init__(self) -> None:
        self._known: dict[Hashable, tuple[types.Diagnostic, Form]] = {}
        self._ids: list[int] = []

    def diagnostics(self, findings: Sequence[Finding], noqa: Noqa, encoding: str,
                    version: int | None) -> list[types.Diagnostic]:
        """`to_diagnostic(finding, noqa, encoding, version, actions=False)` of each finding, with
        its JSON form."""
        known: dict[Hashable, tuple[types.Diagnostic, Form]] = {}
        made = []
        for finding in findings:
            key = _key(finding, noqa.lines, encoding)
            base = self._known.get(key) if key is not None else None
            if base is None:
                form = diagnostic_form(finding, noqa, encoding, actions=False)
                base = _CONVERTER.structure(form, types.Diagnostic), form
            if key is not None:
                known[key] = base
            made.append(_versioned(base, version))
        self._known = known
        self.forget()
        if len(_FORMS) > _MOST:  # a document closed while it was checked left its forms
            _FORMS.clear()
        _FORMS.update((id(diagnostic), (diagnostic, form)) for diagnostic, form in made)
        self._ids = [id(diagnostic) for diagnostic, _ in made]
        return [diagnostic for diagnostic, _ in made]

    def forget(self) -> None:
        for ident in self._ids:
            _FORMS.pop(ident, None)
        self._ids = []


def _key(finding: Finding, lines: Sequence[str], encoding: str) -> Hashable | None:
    """What a diagnostic is made of: the finding, and the text of its lines (its range counts
    their code units); None for a finding past the end (clamped to the end)."""
    first, last = finding.location.row, finding.end_location.row
    if not 1 <= first <= last <= len(lines):
        return None
    return finding, encoding, tuple(lines[first - 1:last])


def _versioned(base: tuple[types.Diagnostic, Form], version: int | None,
               ) -> tuple[types.Diagnostic, Form]:
    diagnostic, form = base
    data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
    return (attrs.evolve(diagnostic, data={**data, "version": version}),
            {**form, "data": {**form.get("data", {}), "version": version}})

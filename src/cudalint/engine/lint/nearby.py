"""What a check's fix simulation reads of a module (cudalint.engine.lint.foreseen): the
module with every top-level function and class, and every method, that holds none of the
findings near a fix blanked as the first pass blanks them (cudalint.engine.first_pass.sparse:
each becomes one bytes literal over its lines, so every other position stays exact). A huge
test module with a few such findings is then parsed, fixed and linted again in those few
functions, not whole: over the torch package, two simulations of a 11,000-line module took
7.3 of the check's 50 CPU-seconds.

A fix in a blanked unit is taken to remove its own finding and nothing else, and no finding
in a blanked unit is marked. Two things the blanked units hold can change what fixing does
elsewhere, and keep them: a top-level function named as a helper a fix calls (the fix then
imports nothing), and a name whose import a fix would remove as unused (`removed`: the
caller then simulates with the whole module)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection, Sequence

from cudalint.engine.first_pass.sparse import Unit, blank, first_line, units_of
from cudalint.engine.reading.ast_parse import parse_quietly
from cudalint.engine.reading.depth import BOM
from cudalint.finding import Finding

_UNITS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class Nearby:
    """`data` with the units that hold no finding near a fix blanked; `read(finding)`: whether
    the finding is in what is left."""

    def __init__(self, data: bytes, hidden: Sequence[Unit]) -> None:
        self.hidden = hidden
        if not hidden:
            self.data = data
            return
        bom = BOM if data.startswith(BOM) else b""
        self.data = bom + blank(data.removeprefix(BOM), hidden)

    def read(self, finding: Finding) -> bool:
        row = finding.location.row
        return not any(unit.first <= row <= unit.last for unit in self.hidden)

    def blanks(self, names: Collection[str]) -> bool:
        """Whether a blanked unit spells one of `names` (an identifier in its text)."""
        wanted = {name.encode() for name in names}
        return any(not wanted.isdisjoint(unit.words) for unit in self.hidden)


def nearby(data: bytes, near: Sequence[Finding], helpers: Collection[str]) -> Nearby:
    """The module as the simulation reads it: every unit holding a finding of `near` (a
    class: its methods and classes that hold none are blanked), every top-level function or
    class named in `helpers`, and every statement that is no unit. Unchanged where `ast`
    cannot read it (the simulation then fails as the lint does)."""
    try:
        tree = parse_quietly(data.removeprefix(BOM))
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError,
            MemoryError):
        return Nearby(data, ())
    rows = [(f.location.row, f.end_location.row) for f in near]

    def holds(unit: Unit) -> bool:
        return any(first <= unit.last and unit.first <= last for first, last in rows)

    hidden: list[Unit] = []
    for unit in units_of(data.removeprefix(BOM), tree):
        if unit.name in helpers:
            continue
        if not holds(unit):
            hidden.append(unit)
        elif isinstance(unit.node, ast.ClassDef):
            lines = data.removeprefix(BOM).splitlines(keepends=True)
            hidden += _members(unit.node, lines, holds)
    return Nearby(data, hidden)


def _members(owner: ast.ClassDef, lines: list[bytes], holds: Callable[[Unit], bool],
             ) -> list[Unit]:
    """The functions and classes in a class's body that hold no nearby finding; those of a
    class in it that holds one, and so on (a test module's `class Tests: class _Base: ...`)."""
    found: list[Unit] = []
    for node in owner.body:
        if not isinstance(node, _UNITS):
            continue
        first, last = first_line(node), node.end_lineno or node.lineno
        unit = Unit(first, last, b"".join(lines[first - 1 : last]), node, top_level=False)
        if not holds(unit):
            found.append(unit)
        elif isinstance(node, ast.ClassDef):
            found += _members(node, lines, holds)
    return found


"""Incremental re-checks of an edited buffer: the findings of each leaf unit are kept, rows
relative to the unit's first line, under the unit's text and its key (lsp/unit_keys.py); a
re-check asks the engine to blank the units whose findings are known (`reuse=`), and shifts
those findings to where their unit now starts. Only the worker thread uses a cache."""

from __future__ import annotations

import ast
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from cudalint.finding import Finding, Position
from cudalint.lsp.unit_keys import Facts, Keys, Unit, facts_of, layout

Entry = tuple[Finding, ...]  # a unit's findings, row 1 being the unit's first line


class Result(Protocol):
    """What engine/python.lint_python returns, as far as the cache reads it."""

    @property
    def findings(self) -> list[Finding]: ...

    @property
    def checked(self) -> Sequence[Unit]: ...

    @property
    def units(self) -> Sequence[Unit]: ...


@dataclass
class Plan:
    """One check's decisions: the key of each leaf unit, and those the engine may blank."""

    keys: dict[int, bytes]  # first line -> key, for the units `units_of` cuts
    blank: dict[int, Entry] = field(default_factory=dict)  # first line -> its known findings

    def reuse(self, unit: Unit) -> bool:
        """The engine's `reuse=`: True for a unit whose findings are known."""
        return unit.first in self.blank


class UnitCache:
    """The known findings of one document's leaf units."""

    def __init__(self, special: frozenset[str]) -> None:
        self.special = special  # names a fix may call, whatever the unit mentions
        self._scope: Hashable = None
        self._entries: dict[tuple[bytes, bytes], Entry] = {}
        self._facts: dict[bytes, Facts] = {}
        self.reused = 0  # units whose findings came from the cache, all checks together

    def plan(self, data: bytes, tree: ast.Module, units: Sequence[Unit],
             scope: Hashable) -> Plan:
        """The decisions for checking `data` (its `ast` tree, its leaf units) under `scope`
        (the rules and settings: entries made under others are dropped)."""
        if scope != self._scope:
            self._scope, self._entries = scope, {}
        lines = data.splitlines()  # as the parser counts lines: \n, \r\n or \r
        found = layout(lines, tree)
        by_first = {unit.first: unit for unit in units if unit.first in found.units}
        facts = {first: self._facts_of(unit, found.units[first][0], lines)
                 for first, unit in by_first.items()}
        self._facts = {unit.text: facts[first] for first, unit in by_first.items()}
        keys = Keys(found, facts, data, self.special)
        plan = Plan({first: keys.key(first) for first in by_first})
        # A unit whose import or `global` other units see is walked whenever they are.
        plan.blank = {first: entry for first, unit in by_first.items()
                      if not facts[first].reaching
                      and (entry := self._entries.get((unit.text, plan.keys[first]))) is not None}
        return plan

    def complete(self, plan: Plan, result: Result) -> list[Finding]:
        """The check's findings, those of the blanked units added back; the cache keeps the
        current units' entries only."""
        if not result.units:  # not parsed (a syntax error): what is known stays known
            return list(result.findings)
        findings = list(result.findings)
        checked = {unit.first for unit in result.checked}
        entries: dict[tuple[bytes, bytes], Entry] = {}
        for unit in result.units:
            key = plan.keys.get(unit.first)
            if key is None:
                continue
            if unit.first in plan.blank:
                entry = plan.blank[unit.first]
                self.reused += 1
                findings.extend(_moved(entry, unit.first - 1))
            elif unit.first in checked:
                entry = tuple(_moved(_within(findings, unit), 1 - unit.first))
            else:
                continue
            entries[unit.text, key] = entry
        self._entries = entries
        return sorted(findings, key=Finding.sort_key)

    def _facts_of(self, unit: Unit, node: ast.stmt, lines: Sequence[bytes]) -> Facts:
        known = self._facts.get(unit.text)
        return known if known is not None else facts_of(node, unit.text, lines)


def _within(findings: list[Finding], unit: Unit) -> list[Finding]:
    return [f for f in findings if unit.first <= f.location.row <= unit.last]


def _moved(entry: Sequence[Finding], rows: int) -> list[Finding]:
    return [replace(f, location=_down(f.location, rows), end_location=_down(f.end_location, rows))
            for f in entry]


def _down(where: Position, rows: int) -> Position:
    return Position(where.row + rows, where.column)


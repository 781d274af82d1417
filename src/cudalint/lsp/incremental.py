"""Incremental re-checks of an edited buffer: the findings of each leaf unit are kept, rows
relative to the unit's first line, under the unit's text and its key (lsp/unit_keys.py); a
re-check asks the engine to blank the units whose findings are known (`reuse=`), and shifts
those findings to where their unit now starts. Only the worker thread uses a cache."""

from __future__ import annotations

import ast
from collections.abc import Callable, Hashable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Protocol

from cudalint.engine.first_pass.prefilter import Prefilter, TermsKey
from cudalint.finding import Finding, Position
from cudalint.lsp.reparse import Reparser
from cudalint.lsp.unit_keys import Facts, Keys, Unit, facts_of, layout

Entry = tuple[Finding, ...]  # a unit's findings, row 1 being the unit's first line


class Result(Protocol):
    """What engine/checkers/python.lint_python returns, as far as the cache reads it."""

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
    """The known findings of one document's leaf units; its last `ast` tree (`reparser`) and
    the first pass's answers about its units' texts (`prefilter`)."""

    def __init__(self, special: frozenset[str]) -> None:
        self.special = special  # names a fix may call, whatever the unit mentions
        self.reparser = Reparser()
        self._prefilter: RememberingPrefilter | None = None
        self._scope: Hashable = None
        self._entries: dict[tuple[bytes, bytes], Entry] = {}
        self._facts: dict[bytes, Facts] = {}
        self._keys: dict[Hashable, bytes] = {}  # the last check's keys (unit_keys.Keys)
        self.reused = 0  # units whose findings came from the cache, all checks together

    def plan(self, data: bytes, tree: ast.Module, units: Sequence[Unit],
             scope: Hashable) -> Plan:
        """The decisions for checking `data` (its `ast` tree, its leaf units) under `scope`
        (the rules and settings: entries made under others are dropped)."""
        if scope != self._scope:
            self._scope, self._entries, self._keys = scope, {}, {}
        lines = data.splitlines()  # as the parser counts lines: \n, \r\n or \r
        found = layout(lines, tree)
        by_first = {unit.first: unit for unit in units if unit.first in found.units}
        facts = {first: self._facts_of(unit, found.units[first][0], lines)
                 for first, unit in by_first.items()}
        self._facts = {unit.text: facts[first] for first, unit in by_first.items()}
        keys = Keys(found, facts, data, self.special, self._keys)
        plan = Plan({first: keys.key(first, unit.text) for first, unit in by_first.items()})
        self._keys = keys.made
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

    def elsewhere(self, data: bytes, tree: ast.Module, units: Sequence[Unit],
                  rows: frozenset[int]) -> Callable[[Unit], bool]:
        """The engine's `reuse=` for a check of `rows` alone: True for a unit that holds none
        of them, and that no other unit's check needs walked (`Facts.reaching`). The cache is
        neither read nor changed."""
        lines = data.splitlines()
        found = layout(lines, tree)
        skipped = {unit.first for unit in units if unit.first in found.units
                   and not any(unit.first <= row <= unit.last for row in rows)
                   and not self._facts_of(unit, found.units[unit.first][0], lines).reaching}
        return lambda unit: unit.first in skipped

    def prefilter(self, prefilter: Prefilter) -> Prefilter:
        """`prefilter`, remembering its answers from one check to the next."""
        if self._prefilter is None or not self._prefilter.same_terms(prefilter):
            self._prefilter = RememberingPrefilter.of(prefilter)
        return self._prefilter

    def _facts_of(self, unit: Unit, node: ast.stmt, lines: Sequence[bytes]) -> Facts:
        known = self._facts.get(unit.text)
        return known if known is not None else facts_of(node, unit.text, lines)


def _within(findings: list[Finding], unit: Unit) -> list[Finding]:
    return [f for f in findings if unit.first <= f.location.row <= unit.last]


def _moved(entry: Sequence[Finding], rows: int) -> list[Finding]:
    return [f.replace(location=_down(f.location, rows), end_location=_down(f.end_location, rows))
            for f in entry]


def _down(where: Position, rows: int) -> Position:
    return Position(where.row + rows, where.column)



@dataclass(frozen=True, eq=False)
class RememberingPrefilter(Prefilter):
    """A prefilter that remembers whether each function's text names a term: the first pass
    asks about every unit of the document on every check, and an edit changes one or two.
    The answer depends on the text alone (`node` is that text as `ast` reads it, `first`
    where it starts). `within` (the terms a version names) remembers its answers too, as long
    as the versions name the same terms."""

    answers: dict[bytes, bool] = field(default_factory=dict, compare=False, repr=False)
    narrowed: dict[TermsKey, RememberingPrefilter] = field(default_factory=dict, compare=False,
                                                        repr=False)

    @classmethod
    def of(cls, prefilter: Prefilter) -> RememberingPrefilter:
        return cls(*prefilter.terms(), prefilter._all_calls, prefilter._followers)

    def same_terms(self, other: Prefilter) -> bool:
        return _terms(self) == _terms(other)

    def within(self, data: bytes) -> Prefilter | None:
        found = super().within(data)
        if found is None:
            return None
        terms = _terms(found)
        if terms not in self.narrowed:
            self.narrowed.clear()
            self.narrowed[terms] = RememberingPrefilter.of(found)
        return self.narrowed[terms]

    def matches_code(self, text: bytes, node: ast.stmt, first: int,
                     words: AbstractSet[bytes] | None = None) -> bool:
        known = self.answers.get(text)
        if known is None:
            if len(self.answers) > _REMEMBERED:  # texts of versions long gone
                self.answers.clear()
            known = self.answers[text] = super().matches_code(text, node, first, words)
        return known


_REMEMBERED = 20_000


def _terms(prefilter: Prefilter) -> TermsKey:
    return prefilter.terms()

"""Makefiles: recipe lines (the shell commands make runs), variable assignments, `$(shell ...)`,
and the rows inside `ifdef CUDA_HOME`-style conditionals."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from cudalint.formats.shell import Segment, Word, mentions_probe

_ASSIGNMENT = re.compile(
    r"^(?P<export>export\s+|override\s+)?(?P<name>[A-Za-z_][A-Za-z0-9_.]*)\s*(?:[:!?+]{0,3})=\s*(?P<value>.*)$"
)
_RULE = re.compile(r"^[^\t#=][^=]*:(?!=)")
_REFERENCE = re.compile(r"\$\$|\$\((\w+)\)|\$\{(\w+)\}")
_SHELL_CALL = re.compile(r"\$\(shell\s+")
_CONDITIONAL = re.compile(r"^\s*(ifeq|ifneq|ifdef|ifndef|else|endif)\b(.*)$")


@dataclass(frozen=True)
class Assignment:
    name: str
    value: str
    row: int
    column: int
    exported: bool


@dataclass(frozen=True)
class Makefile:
    recipes: tuple[tuple[Segment, ...], ...]  # physical recipe lines, variables expanded
    shell_calls: tuple[Segment, ...]  # the commands of `$(shell ...)` anywhere
    assignments: tuple[Assignment, ...]
    guarded_rows: frozenset[int]


@lru_cache(maxsize=8)
def parse(text: str) -> Makefile:
    lines = text.splitlines()
    assignments: list[Assignment] = []
    recipes: list[tuple[Segment, ...]] = []
    shell_calls: list[Segment] = []
    guarded: set[int] = set()
    conditions: list[_Conditional] = []
    in_recipe = continued = False
    for index, line in enumerate(lines):
        row = index + 1
        shell_calls.extend(_shell_calls(line, row))
        if any(c.guarded for c in conditions):
            guarded.add(row)
        if in_recipe and (line.startswith("\t") or continued):
            recipes.append(_recipe_line(line, row, assignments, continuation=continued))
            continued = line.endswith("\\")
            continue
        continued = False
        conditional = _CONDITIONAL.match(line)
        if conditional:
            _track(conditions, conditional.group(1), conditional.group(2))
            continue
        assignment = _ASSIGNMENT.match(line)
        if assignment and not line.startswith("\t"):
            in_recipe = False
            assignments.append(
                Assignment(assignment.group("name"), assignment.group("value").strip(), row,
                           assignment.start("name") + 1, bool(assignment.group("export")))
            )
        elif _RULE.match(line):
            in_recipe = True
            _, _, inline = line.partition(";")
            if ";" in line:  # `target: deps ; command`
                start = line.index(";") + 1
                recipes.append((Segment(row, start + 1, inline),))
        elif line.strip() and not line.startswith("\t") and not line.lstrip().startswith("#"):
            in_recipe = False
    return Makefile(tuple(recipes), tuple(shell_calls), tuple(assignments), frozenset(guarded))


@dataclass
class _Conditional:
    probe: bool  # the condition mentions CUDA
    negated: bool  # true when CUDA is absent: `ifndef CUDA_HOME`, `ifeq ($(shell which nvcc),)`
    in_else: bool = False

    @property
    def guarded(self) -> bool:
        return self.probe and self.negated == self.in_else


def _track(conditions: list[_Conditional], keyword: str, argument: str) -> None:
    if keyword.startswith("if"):
        empty = re.search(r",\s*\)\s*$", argument) is not None
        negated = {"ifdef": False, "ifndef": True, "ifeq": empty, "ifneq": not empty}[keyword]
        conditions.append(_Conditional(mentions_probe([Word(argument, 0, 0)]), negated))
    elif keyword == "else" and conditions:
        conditions[-1].in_else = True
    elif keyword == "endif" and conditions:
        conditions.pop()


def _recipe_line(line: str, row: int, assignments: list[Assignment], *, continuation: bool,
                 ) -> tuple[Segment, ...]:
    """A recipe line less its tab and `@`/`-`/`+` prefixes, with `$(VAR)` replaced by the value
    of VAR where the Makefile sets it (each replacement its own piece, so columns hold)."""
    start = len(line) - len(line.lstrip("\t"))
    while not continuation and start < len(line) and line[start] in "@-+ ":
        start += 1
    values = {a.name: a.value for a in assignments}
    pieces: list[Segment] = []
    cursor = start
    for match in _REFERENCE.finditer(line, start):
        name = match.group(1) or match.group(2)
        if match.group(0) == "$$":
            replacement = "$"
        elif name in values and "$" not in values[name]:
            replacement = values[name]
        else:
            replacement = "${" + (name or "") + "}"  # a parameter, not a command substitution
        pieces.append(Segment(row, cursor + 1, line[cursor : match.start()]))
        pieces.append(Segment(row, match.start() + 1, replacement))
        cursor = match.end()
    pieces.append(Segment(row, cursor + 1, line[cursor:]))
    return tuple(piece for piece in pieces if piece.text)


def _shell_calls(line: str, row: int) -> Iterator[Segment]:
    for match in _SHELL_CALL.finditer(line):
        level, end = 1, match.end()
        while end < len(line) and level:
            level += {"(": 1, ")": -1}.get(line[end], 0)
            end += 1
        yield Segment(row, match.end() + 1, line[match.end() : end - 1 if level == 0 else end])

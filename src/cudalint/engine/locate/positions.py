"""Positions of reported nodes, computed only for the statements that hold them.

LibCST's PositionProvider generates the whole module's code to place every node; here the
innermost statement of an indented block around a report (a line of a function, an `if`), or
else a top-level statement or a statement of a top-level class's body (a method), is generated
alone, starting at the line `ast` gives it (cudalint.engine.first_pass.outline) and at the
indentation of the blocks around it, which gives the same positions for its nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import CodeRange

from cudalint.engine.locate.codegen_positions import positions_of
from cudalint.engine.walk.traversal import ENTRIES

if TYPE_CHECKING:
    from cudalint.engine.first_pass.outline import Outline
    from cudalint.engine.first_pass.runs import Tables
    from cudalint.engine.walk.traversal import Chain, Place


class StatementPositions(Mapping[cst.CSTNode, CodeRange]):
    """Looks first in the statements named by `chains` (the innermost around each report, in
    the order of the reports), then in the places named by `hints` (those that reported
    something; methods before classes), then in the other top-level statements, and in the
    whole module for a node outside every statement."""

    def __init__(self, module: cst.Module, first_pass: Outline, hints: Iterable[Place],
                 chains: Iterable[Chain] = (), tables: Tables | None = None) -> None:
        self._module = module
        self._first_pass = first_pass
        self._tables = tables
        hinted = sorted(set(hints), key=lambda place: (-len(place), place))
        tops = {place[0] for place in hinted if len(place) == 1}
        rest = [(i,) for i in range(len(first_pass.starts)) if i not in tops]
        self._pending = [*reversed(rest), *reversed(hinted)]  # popped from the end
        self._chains = list(chains)[::-1]  # popped from the end, before the places
        self._known: dict[cst.CSTNode, CodeRange] = {}
        self._member_starts: dict[int, tuple[int, ...] | None] = {}
        self._whole = False

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        while node not in self._known:
            if self._chains:
                self._place_chain(self._chains.pop())
            elif self._pending:
                self._place(self._pending.pop())
            elif not self._whole:
                self._place_whole()
            else:
                raise KeyError(node)
        return self._known[node]

    def __iter__(self) -> Iterator[cst.CSTNode]:
        self._place_whole()
        return iter(self._known)

    def __len__(self) -> int:
        self._place_whole()
        return len(self._known)

    def _place(self, place: Place) -> None:
        index = place[0]
        statement = self._module.body[index]
        if len(place) == 1:
            self._generate(statement, self._first_pass.starts[index], [])
            return
        if index not in self._member_starts:
            self._member_starts[index] = self._first_pass.member_starts(index, statement)
        starts = self._member_starts[index]
        block = getattr(statement, "body", None)
        if starts is None or not isinstance(block, cst.IndentedBlock):
            return  # the class itself is placed later
        indent = self._module.default_indent if block.indent is None else block.indent
        self._generate(block.body[place[1]], starts[place[1]], [indent])

    def _place_chain(self, chain: Chain) -> None:
        index, nodes = chain
        if isinstance(nodes[-1], ENTRIES):
            where = None if self._tables is None else self._tables.entry_start(index, nodes)
            if where is not None:
                self._known.update(positions_of(nodes[-1], self._module, where[0],
                                                column=where[1]))
            return
        start = self._first_pass.nested_start(index, nodes, self._module.default_indent)
        if start is not None:
            self._generate(nodes[-1], *start)

    def _generate(self, statement: cst.CSTNode, line: int, indent: list[str]) -> None:
        self._known.update(positions_of(statement, self._module, line, indent))

    def _place_whole(self) -> None:
        if self._whole:
            return
        self._whole = True
        self._known.update(whole_module_positions(self._module))


def whole_module_positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    return positions_of(module, module)

"""Positions of reported nodes, computed only for the top-level statements that hold them.

LibCST's PositionProvider generates the whole module's code to place every node; here a
statement's code is generated alone, starting at the line the first pass (cudalint.engine.outline)
found for it, which gives the same positions for its nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState


class StatementPositions(Mapping[cst.CSTNode, CodeRange]):
    """Looks first in the statements named by `hints` (those that reported something), then
    in the others, and in the whole module for a node outside every statement."""

    def __init__(self, module: cst.Module, starts: Iterable[int], hints: Iterable[int]) -> None:
        self._module = module
        self._starts = tuple(starts)
        hinted = sorted(set(hints))
        rest = [i for i in range(len(self._starts)) if i not in set(hinted)]
        self._pending = [*reversed(rest), *reversed(hinted)]  # popped from the end
        self._known: dict[cst.CSTNode, CodeRange] = {}
        self._whole = False

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        while node not in self._known:
            if self._pending:
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

    def _place(self, index: int) -> None:
        provider = PositionProvider()
        state = PositionProvidingCodegenState(
            default_indent=self._module.default_indent,
            default_newline=self._module.default_newline,
            provider=provider,
            line=self._starts[index],
        )
        self._module.body[index]._codegen(state)
        self._known.update(provider._computed)  # type: ignore[arg-type]

    def _place_whole(self) -> None:
        if self._whole:
            return
        self._whole = True
        self._known.update(whole_module_positions(self._module))


def whole_module_positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)

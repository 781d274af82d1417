"""One walk over a module that calls every enabled Python rule (as LibCST's visit_batched)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.context import PythonContext

if TYPE_CHECKING:
    from cudalint.rules.base import PythonRule

_Callback = Callable[[cst.CSTNode], object]


class _BatchedWalk(cst.CSTVisitor):
    def __init__(self, ctx: PythonContext, rules: Sequence[PythonRule]) -> None:
        super().__init__()
        self.ctx = ctx
        self.visits: dict[str, list[_Callback]] = defaultdict(list)
        self.leaves: dict[str, list[_Callback]] = defaultdict(list)
        for rule in rules:
            for attr in dir(rule):
                if attr.startswith("visit_"):
                    self.visits[attr[len("visit_") :]].append(getattr(rule, attr))
                elif attr.startswith("leave_"):
                    self.leaves[attr[len("leave_") :]].append(getattr(rule, attr))
        self.statements = {id(s): i for i, s in enumerate(ctx.module.body)}
        self.skip: Collection[int] = ()  # ids of the nodes not visited, nor their children
        self.reported: set[int] = set()  # indexes of top-level statements that reported
        self._skipping: cst.CSTNode | None = None
        self._reports_before = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.skip:
            self._skipping = node
            return False
        self.ctx.enter(node)
        for callback in self.visits.get(type(node).__name__, ()):
            callback(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if original_node is self._skipping:
            self._skipping = None
            return
        for callback in self.leaves.get(type(original_node).__name__, ()):
            callback(original_node)
        self.ctx.leave(original_node)
        if len(self.ctx.stack) == 1 and len(self.ctx.reports) > self._reports_before \
                and id(original_node) in self.statements:
            self.reported.add(self.statements[id(original_node)])
            self._reports_before = len(self.ctx.reports)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.ctx.enter_attribute(node, attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        self.ctx.leave_attribute(original_node, attribute)


def walk(
    ctx: PythonContext, rule_classes: Sequence[type[PythonRule]], skip: Collection[int] = ()
) -> set[int]:
    """Run the rules over `ctx.module`, but not into the nodes whose ids are in `skip`; their
    reports land in `ctx.reports`. Returns the indexes of the top-level statements that
    reported something."""
    rules = [rule_class(ctx) for rule_class in rule_classes]
    walker = _BatchedWalk(ctx, rules)
    walker.skip = skip
    ctx.module.visit(walker)
    return walker.reported


def find_all(node: cst.CSTNode, kinds: tuple[type[cst.CSTNode], ...]) -> Iterator[cst.CSTNode]:
    """`node` and its descendants of the given types, in source order, as `m.findall` finds
    them, without importing libcst.matchers (half a second at start-up)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, kinds):
            yield current
        stack.extend(reversed(current.children))

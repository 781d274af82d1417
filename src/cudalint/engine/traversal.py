"""One walk over a module that calls every enabled Python rule (as LibCST's visit_batched)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

import libcst as cst

from cudalint.engine.context import PythonContext
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

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.ctx.enter(node)
        for callback in self.visits.get(type(node).__name__, ()):
            callback(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        for callback in self.leaves.get(type(original_node).__name__, ()):
            callback(original_node)
        self.ctx.leave(original_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.ctx.enter_attribute(node, attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        self.ctx.leave_attribute(original_node, attribute)


def walk(ctx: PythonContext, rule_classes: Sequence[type[PythonRule]]) -> None:
    """Run the rules over `ctx.module`; their reports land in `ctx.reports`."""
    rules = [rule_class(ctx) for rule_class in rule_classes]
    ctx.module.visit(_BatchedWalk(ctx, rules))

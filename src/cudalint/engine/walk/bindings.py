"""The names a function binds, so that a fix never calls a helper that a parameter or a local
variable of the same name hides."""

from __future__ import annotations

from functools import lru_cache

import libcst as cst

from cudalint.engine.walk import visiting


@lru_cache(maxsize=32)  # nodes hash by identity; the findings of one function share it
def bound_names(scope: cst.FunctionDef) -> frozenset[str]:
    """The names a function binds (nested functions included, to be safe): parameters,
    assignment targets, imports, defs."""
    finder = _Bindings()
    visiting.visit(scope.params, finder)
    visiting.visit(scope.body, finder)
    return frozenset(finder.names)


class _Bindings(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def _check(self, target: cst.CSTNode | None) -> None:
        if target is not None:
            self.names.update(target_names(target))

    def visit_Param(self, node: cst.Param) -> None:
        self._check(node.name)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._check(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._check(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._check(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._check(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._check(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._check(node.name)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            head: cst.BaseExpression = node.name
            while isinstance(head, cst.Attribute):
                head = head.value
            self._check(head)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._check(node.name)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._check(node.name)


def target_names(target: cst.CSTNode) -> set[str]:
    """The names an assignment target binds: `x`, `a, (b, *c)`, `[d, e]`."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in target_names(element.value)}
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return set()

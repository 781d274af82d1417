"""Uses of the torch APIs in the CUDA API table, and where a fix may call a helper.

A *use* is a whole dotted reference that is read (`torch.cuda.synchronize`, `tc.synchronize`,
`synchronize` after `from torch.cuda import synchronize`): not a part of a longer reference,
not an import, not an assignment target, not a type annotation.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine import guards
from cudalint.rules.cud1_device import cuda_api_table
from cudalint.rules.cud1_device.cuda_api_table import CudaApi

if TYPE_CHECKING:
    from cudalint.engine.context import PythonContext

_ROOTS = ("torch.",)
_BROAD_EXCEPTIONS = frozenset({"Exception", "BaseException"})


@dataclass(frozen=True)
class ApiUse:
    name: str  # the qualified name used ("torch.cuda.synchronize")
    api: CudaApi
    node: cst.Name | cst.Attribute
    call: cst.Call | None  # the call the reference is the function of


def api_use(ctx: PythonContext, node: cst.Name | cst.Attribute) -> ApiUse | None:
    """The table entry `node` uses, when it is a use (see the module docstring)."""
    name = whole_reference(ctx, node)
    if name is None:
        return None
    api = cuda_api_table.lookup(name)
    if api is None:
        return None
    parent = ctx.parent()
    call = parent if isinstance(parent, cst.Call) and parent.func is node else None
    return ApiUse(name, api, node, call)


def whole_reference(ctx: PythonContext, node: cst.Name | cst.Attribute) -> str | None:
    """The qualified name of a whole reference being read; None for anything else."""
    # Cheap tests first: this runs for every name in the module (exact `type() is` tests
    # avoid the ABC instance checks of libcst's classes).
    if type(node) is cst.Name and node.value not in ctx.aliases:
        return None  # only imported names resolve to a torch API
    parent = ctx.parent()
    if type(parent) is cst.Attribute:
        return None  # a part of a longer reference, or the name after the dot
    name = ctx.qualname(node)
    if name is None or not name.startswith(_ROOTS):
        return None
    if type(node) is cst.Name and not _is_read_name(parent, node):
        return None
    if is_assigned(ctx, node) or _in_import_or_annotation(ctx):
        return None
    return name


def _is_read_name(parent: cst.CSTNode | None, node: cst.Name) -> bool:
    if isinstance(parent, cst.Arg):
        return parent.keyword is not node
    return not isinstance(
        parent, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.AsName, cst.NameItem)
    )


def is_assigned(ctx: PythonContext, node: cst.CSTNode) -> bool:
    """True when `node` is (an element of) an assignment, `for`, `del` or walrus target."""
    child = node
    for ancestor in ctx.ancestors():
        if isinstance(ancestor, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
            child = ancestor
            continue
        if isinstance(ancestor, (cst.AssignTarget, cst.Del)):
            return ancestor.target is child
        if isinstance(ancestor, (cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor,
                                 cst.NamedExpr)):
            return ancestor.target is child
        return False
    return False


def _in_import_or_annotation(ctx: PythonContext) -> bool:
    for ancestor in ctx.ancestors():
        if isinstance(ancestor, (cst.Import, cst.ImportFrom, cst.Annotation)):
            return True
        if isinstance(ancestor, (cst.BaseStatement, cst.BaseSmallStatement)):
            return False
    return False


# -- when code runs ------------------------------------------------------------------------
def runs_at_import(ctx: PythonContext) -> bool:
    """True when the visited node runs on import: module or class level, or in a decorator or
    a default argument of a function defined there; not under `if __name__ == "__main__":`,
    and not in a `try` whose handler catches every exception."""
    child: cst.CSTNode | None = None
    for node in reversed(ctx.stack):
        if isinstance(node, (cst.FunctionDef, cst.Lambda)) and child is node.body:
            return False
        if isinstance(node, cst.If) and child is node.body and guards.is_main_check(node.test):
            return False
        if isinstance(node, cst.Try) and child is node.body and _catches_everything(node):
            return False
        child = node
    return True


def _catches_everything(node: cst.Try) -> bool:
    for handler in node.handlers:
        if handler.type is None:
            return True
        kinds = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
        for kind in kinds:
            value = kind.value if isinstance(kind, cst.Element) else kind
            if isinstance(value, cst.Name) and value.value in _BROAD_EXCEPTIONS:
                return True
    return False


# -- helper names --------------------------------------------------------------------------
def can_call_helper(ctx: PythonContext, name: str) -> bool:
    """Whether a fix may call the helper `name` here: the module does not bind the name to
    something else, and no enclosing function binds it (a parameter, a local variable)."""
    return ctx.helper_available(name) and not bound_in_function(ctx, name)


def bound_in_function(ctx: PythonContext, name: str) -> bool:
    return any(
        name in bound_names(scope) for scope in ctx.ancestors()
        if isinstance(scope, cst.FunctionDef)
    )


@lru_cache(maxsize=32)  # nodes hash by identity; the findings of one function share it
def bound_names(scope: cst.FunctionDef) -> frozenset[str]:
    """The names a function binds (nested functions included, to be safe): parameters,
    assignment targets, imports, defs."""
    finder = _Bindings()
    scope.params.visit(finder)
    scope.body.visit(finder)
    return frozenset(finder.names)


class _Bindings(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def _check(self, target: cst.CSTNode | None) -> None:
        if target is not None:
            self.names.update(_bound_names(target))

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


def _bound_names(target: cst.CSTNode) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in _bound_names(element.value)}
    if isinstance(target, cst.StarredElement):
        return _bound_names(target.value)
    return set()

"""Uses of the torch APIs in the CUDA API table, and where a fix may call a helper.

A *use* is a whole dotted reference that is read (`torch.cuda.synchronize`, `tc.synchronize`,
`synchronize` after `from torch.cuda import synchronize`): not a part of a longer reference,
not an import, not an assignment target, not a type annotation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import PythonRule
from cudalint.engine.walk import guards
from cudalint.engine.walk.context import root_name
from cudalint.rules.cud1_device import cuda_api_table
from cudalint.rules.cud1_device.cuda_api_table import CudaApi

if TYPE_CHECKING:
    from cudalint.engine.walk.context import PythonContext

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


class ApiUseRule(PythonRule):
    """A rule about uses of the torch.cuda API table (CUD104-CUD107, CUD109, CUD110): each
    Name and Attribute is looked up once for all of them, and `check_use` gets the uses."""

    follows_assignments = False  # a use names the API, or an import's alias of it

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # a part of a longer reference, or (most attributes: `self.x`, `f().y`) one whose
        # root is no torch name, uses no API of the table
        if type(self.ctx.parent()) is not cst.Attribute and _rooted_in_torch(self.ctx, node):
            self._dispatch(node)

    def visit_Name(self, node: cst.Name) -> None:
        # not an import: no torch API; in an attribute (`torch` in `torch.cuda`): a part
        if node.value in self.ctx.aliases and type(self.ctx.parent()) is not cst.Attribute:
            self._dispatch(node)

    def _dispatch(self, node: cst.Name | cst.Attribute) -> None:
        use = self.ctx.shared("api_use", node, lambda: api_use(self.ctx, node))
        if use is not None:
            self.check_use(use)

    def check_use(self, use: ApiUse) -> None:
        raise NotImplementedError


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


def _rooted_in_torch(ctx: PythonContext, node: cst.Attribute) -> bool:
    """The leftmost name of the reference is torch, or an alias of torch or of something in
    it: else its qualified name (`ctx.qualname`) cannot start with `torch.`."""
    root = root_name(node)
    if root is None:
        return False
    name = ctx.aliases.get(root.value, root.value)
    return name is not None and (name == "torch" or name.startswith(_ROOTS))


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

"""CUD105's fix for names imported from torch.cuda: `from torch.cuda import synchronize`
becomes `from <helper module> import synchronize`, so every call of the name is fixed at once.

A name moves only when every use of it in the module is a call the helper accepts (a class
such as `Event` must not reach `isinstance`), and the module defines nothing of that name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import NodeFix
from cudalint.engine.settings import INLINE_MODULE
from cudalint.engine.walk import visiting
from cudalint.engine.walk.context import dotted_name
from cudalint.rules.cud1_device import cuda_api_table
from cudalint.rules.cud1_device.cuda_api_fixes import fits

if TYPE_CHECKING:
    from cudalint.engine.walk.context import PythonContext

_CODE = "CUD105"


def import_fix(ctx: PythonContext, local: str) -> NodeFix | None:
    """The fix moving `local` from its `from torch.cuda import ...` to the helper module."""
    if ctx.settings.helper_module == INLINE_MODULE:
        return None  # the helper is written into the file: no module to import it from
    statement = _binding(ctx.module, local)
    if statement is None:
        return None
    moves = {alias_local(a): helper for a in _aliases(statement)
             if (helper := _movable(ctx, statement, a)) is not None}
    if local not in moves:
        return None
    message = f"Import `{moves[local]}` from `{ctx.settings.helper_module}`"
    if len(moves) == len(_aliases(statement)):
        return NodeFix(statement, _from_helper(ctx, moves), message)
    # Some names stay with torch.cuda: move the ones the engine can import plainly.
    plain = {name for name, helper in moves.items()
             if name == helper and _unaliased(statement, name)}
    if local not in plain:
        return None
    kept = [a for a in _aliases(statement) if alias_local(a) not in plain]
    kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return NodeFix(statement, statement.with_changes(names=kept), message,
                   helpers=tuple(sorted(plain)))


def alias_local(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return dotted_name(alias.name)


def _aliases(statement: cst.ImportFrom) -> list[cst.ImportAlias]:
    return [] if isinstance(statement.names, cst.ImportStar) else list(statement.names)


def _unaliased(statement: cst.ImportFrom, name: str) -> bool:
    return any(a.asname is None and dotted_name(a.name) == name for a in _aliases(statement))


def _movable(ctx: PythonContext, statement: cst.ImportFrom, alias: cst.ImportAlias) -> str | None:
    """The helper replacing the imported name, when every use of it can call the helper."""
    module = dotted_name(statement.module) if statement.module is not None else ""
    api = cuda_api_table.lookup(f"{module}.{dotted_name(alias.name)}")
    if api is None or api.code != _CODE or api.helper is None:
        return None
    local = alias_local(alias)
    if local in ctx.top_level_names:
        return None
    calls = _calls_of(ctx.module, local)
    if calls is None or not all(fits(api.params, call.args) for call in calls):
        return None
    return api.helper


def _from_helper(ctx: PythonContext, moves: dict[str, str]) -> cst.ImportFrom:
    names = [
        cst.ImportAlias(
            name=cst.Name(helper),
            asname=None if local == helper else cst.AsName(name=cst.Name(local)),
        )
        for local, helper in moves.items()
    ]
    module = cst.parse_expression(ctx.settings.helper_module)
    assert isinstance(module, (cst.Name, cst.Attribute))
    return cst.ImportFrom(module=module, names=names)


def _binding(module: cst.Module, local: str) -> cst.ImportFrom | None:
    """The one `from torch.cuda[.sub] import ...` statement that binds `local`."""
    finder = _ImportFinder(local)
    visiting.visit(module, finder)
    if len(finder.found) != 1:
        return None
    return finder.found[0]


class _ImportFinder(cst.CSTVisitor):
    def __init__(self, local: str) -> None:
        super().__init__()
        self.local = local
        self.found: list[cst.ImportFrom] = []

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None:
            return False
        module = cuda_api_table.canonical(dotted_name(node.module))
        if module == "torch.cuda" and any(alias_local(a) == self.local for a in _aliases(node)):
            self.found.append(node)
        return False


def _calls_of(module: cst.Module, local: str) -> list[cst.Call] | None:
    """Every call of the name `local`; None when it is also used otherwise (passed on, bound
    again, checked with isinstance)."""
    finder = _NameUses(local)
    visiting.visit(module, finder)
    return None if finder.other_use else finder.calls


class _NameUses(cst.CSTVisitor):
    def __init__(self, local: str) -> None:
        super().__init__()
        self.local = local
        self.calls: list[cst.Call] = []
        self.other_use = False
        self.stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        parent = self.stack[-1] if self.stack else None
        self.stack.append(node)
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            return False
        if isinstance(node, cst.Name) and node.value == self.local:
            self._note(parent, node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()

    def _note(self, parent: cst.CSTNode | None, node: cst.Name) -> None:
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return  # `x.synchronize`: another object's attribute
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            return  # `f(synchronize=True)`
        if isinstance(parent, cst.Call) and parent.func is node:
            self.calls.append(parent)
            return
        self.other_use = True

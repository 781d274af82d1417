"""The last value assigned to a plain name, per scope, in source order.

Enough to follow `backend = "nccl"; dist.init_process_group(backend)` or
`a = np.random.rand(3); torch.from_numpy(a).to(device)`: direct assignments in the same
function (or at module level), no data flow through branches, calls or attributes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import PythonRule

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator

    from cudalint.engine.walk.context import PythonContext

_MAX_HOPS = 4  # `a = b; b = c; ...`: stop long (or cyclic, `a = a * 2`) chains of names


@dataclass(frozen=True)
class Binding:
    value: cst.BaseExpression
    guarded: bool  # assigned under a CUDA check: a finding there is lowered one step


# An entry of a kwargs dict: where it is written (the dict entry, the keyword argument of
# `dict(...)`, the subscript assigned), its key, its value, and whether it was set under a CUDA
# check.
Entry = tuple[cst.CSTNode, str, cst.BaseExpression, bool]


@dataclass(frozen=True)
class Item:
    """`kwargs["device_ids"] = [rank]`: the key, the subscript assigned, and the value."""

    key: str
    target: cst.Subscript
    binding: Binding


class _Scopes:
    """The assignments seen so far in one walk, per scope: one record for every rule that
    follows them (they all see the same assignments), kept by the first of them (`owner`)."""

    def __init__(self, owner: TracksAssignments) -> None:
        self.owner = owner
        self.values: list[dict[str, Binding | None]] = [{}]
        # `kwargs["device_ids"] = ...`: name -> its items set so far, per scope
        self.items: list[dict[str, list[Item]]] = [{}]


class TracksAssignments(PythonRule):
    """A rule that remembers assignments; subclasses overriding a hook call `super()`."""

    def __init__(self, ctx: PythonContext) -> None:
        super().__init__(ctx)
        record = ctx.walk_records.get("assignments")
        if not isinstance(record, _Scopes):
            record = ctx.walk_records["assignments"] = _Scopes(self)
        self._scopes = record.values
        self._item_scopes = record.items
        self._keeps = record.owner is self  # the others read what the owner keeps

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._keeps:
            self._scopes.append({})
            self._item_scopes.append({})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._keeps:
            self._scopes.pop()
            self._item_scopes.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self._keeps:
            self._scopes.append({})
            self._item_scopes.append({})

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        if self._keeps:
            self._scopes.pop()
            self._item_scopes.pop()

    def leave_Assign(self, node: cst.Assign) -> None:
        if not self._keeps:
            return
        for target in node.targets:
            self._bind(target.target, node.value)
            self._set_item(target.target, node.value)

    def _set_item(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if not isinstance(target, cst.Subscript) or not isinstance(target.value, cst.Name) \
                or len(target.slice) != 1:
            return
        index = target.slice[0].slice
        key = index.value if isinstance(index, cst.Index) else None
        if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str):
            item = Item(key.evaluated_value, target, Binding(value, self.ctx.is_guarded()))
            self._item_scopes[-1].setdefault(target.value.value, []).append(item)

    def items(self, name: cst.Name) -> list[Item]:
        """The `name["key"] = value` assignments so far, in the current scope or else at
        module level."""
        for scope in (self._item_scopes[-1], self._item_scopes[0]):
            if name.value in scope:
                return scope[name.value]
        return []

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._keeps and node.value is not None:
            self._bind(node.target, node.value)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        if self._keeps:
            self._bind(node.target, None)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            binding = None if value is None else Binding(value, self.ctx.is_guarded())
            self._scopes[-1][target.value] = binding
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, None)  # unpacking: the value is unknown

    def binding(self, name: cst.Name) -> Binding | None:
        """The binding of `name` in the current scope, else at module level."""
        for scope in (self._scopes[-1], self._scopes[0]):
            if name.value in scope:
                return scope[name.value]
        return None

    def resolve(self, expr: cst.BaseExpression) -> tuple[cst.BaseExpression, Binding | None]:
        """`expr`, or the value a name in it was last assigned, following names a few hops;
        with the last binding followed (None when `expr` is not a bound name)."""
        last: Binding | None = None
        for _ in range(_MAX_HOPS):
            if not isinstance(expr, cst.Name):
                break
            binding = self.binding(expr)
            if binding is None:
                break
            expr, last = binding.value, binding
        return expr, last

    def kwargs_entries(self, expr: cst.BaseExpression, keys: Collection[str]) -> Iterator[Entry]:
        """The entries of `keys` in a kwargs dict passed with `**expr`: a dict literal,
        `dict(...)`, or `kwargs["key"] = ...` before the call."""
        value, binding = self.resolve(expr)
        guarded = binding is not None and binding.guarded
        if isinstance(value, cst.Dict):
            for element in value.elements:
                key = element.key if isinstance(element, cst.DictElement) else None
                if isinstance(key, cst.SimpleString) and key.evaluated_value in keys:
                    yield element, str(key.evaluated_value), element.value, guarded
        elif isinstance(value, cst.Call) and self.ctx.call_name(value) == "dict":
            for arg in value.args:
                if arg.keyword is not None and arg.keyword.value in keys:
                    yield arg, arg.keyword.value, arg.value, guarded
        if isinstance(expr, cst.Name):
            for item in self.items(expr):
                if item.key in keys:
                    yield item.target, item.key, item.binding.value, item.binding.guarded

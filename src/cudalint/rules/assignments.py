"""The last value assigned to a plain name, per scope, in source order.

Enough to follow `backend = "nccl"; dist.init_process_group(backend)` or
`a = np.random.rand(3); torch.from_numpy(a).to(device)`: direct assignments in the same
function (or at module level), no data flow through branches, calls or attributes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.rules.base import PythonRule

if TYPE_CHECKING:
    from cudalint.engine.context import PythonContext

_MAX_HOPS = 4  # `a = b; b = c; ...`: stop long (or cyclic, `a = a * 2`) chains of names


@dataclass(frozen=True)
class Binding:
    value: cst.BaseExpression
    guarded: bool  # assigned under a CUDA check: a finding there is lowered one step


class TracksAssignments(PythonRule):
    """A rule that remembers assignments; subclasses overriding a hook call `super()`."""

    def __init__(self, ctx: PythonContext) -> None:
        super().__init__(ctx)
        self._scopes: list[dict[str, Binding | None]] = [{}]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append({})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.append({})

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.pop()

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
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

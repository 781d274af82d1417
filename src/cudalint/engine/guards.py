"""Which branches only run on a CUDA machine (or only when an optional import worked).

A finding inside such a branch is *guarded*: its severity is lowered one step, never hidden.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from cudalint import data

if TYPE_CHECKING:
    from cudalint.engine.context import PythonContext

# torch.cuda.is_available, device_count, ...: the `probe = true` entries of torch_cuda_api.toml
_PROBES = frozenset(
    name for name, entry in data.load("torch_cuda_api.toml")["api"].items() if entry.get("probe")
)
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})
# The only node types whose children branch_guard can find guarded.
BRANCHING = frozenset({cst.If, cst.IfExp, cst.Try, cst.TryStar, cst.BooleanOperation})


def is_cuda_string(expr: cst.BaseExpression) -> bool:
    """`"cuda"` or `"cuda:<n>"` as a plain string literal."""
    if not isinstance(expr, cst.SimpleString):
        return False
    value = expr.evaluated_value
    return isinstance(value, str) and (value == "cuda" or value.startswith("cuda:"))


def is_cuda_comparison(expr: cst.BaseExpression) -> bool:
    """`x == "cuda"`, `x.type == "cuda"`, `"cuda" in x`, `x.startswith("cuda")`."""
    if isinstance(expr, cst.Comparison):
        operands = [expr.left, *(t.comparator for t in expr.comparisons)]
        operators = [t.operator for t in expr.comparisons]
        if any(isinstance(op, (cst.Equal, cst.In)) for op in operators):
            return any(is_cuda_string(o) for o in operands)
        return False
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value == "startswith":
        return bool(expr.args) and is_cuda_string(expr.args[0].value)
    return False


def is_cuda_probe(ctx: PythonContext, expr: cst.BaseExpression) -> bool:
    """True when `expr` is true only where CUDA is in use."""
    if isinstance(expr, cst.BooleanOperation):
        left, right = is_cuda_probe(ctx, expr.left), is_cuda_probe(ctx, expr.right)
        return (left or right) if isinstance(expr.operator, cst.And) else (left and right)
    if isinstance(expr, cst.Call):
        return ctx.call_name(expr) in _PROBES
    if isinstance(expr, cst.Comparison) and isinstance(expr.left, cst.Call):
        # torch.cuda.device_count() > 0
        return ctx.call_name(expr.left) in _PROBES
    if isinstance(expr, cst.Attribute):
        if expr.attr.value == "is_cuda":
            return True
        return _names_cuda_flag(expr.attr.value)
    if isinstance(expr, cst.Name):
        return _names_cuda_flag(expr.value)
    return is_cuda_comparison(expr)


def _names_cuda_flag(name: str) -> bool:
    """`use_cuda`, `args.cuda`, `has_cuda`: a flag that says CUDA is in use."""
    lowered = name.lower()
    return lowered == "cuda" or lowered.startswith(("use_cuda", "has_cuda", "cuda_avail"))


def _negated(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return expr.expression
    return None


def is_main_check(expr: cst.BaseExpression) -> bool:
    """`if __name__ == "__main__":`"""
    if not (isinstance(expr, cst.Comparison) and isinstance(expr.left, cst.Name)
            and expr.left.value == "__name__" and len(expr.comparisons) == 1):
        return False
    target = expr.comparisons[0]
    return isinstance(target.operator, cst.Equal) \
        and isinstance(target.comparator, cst.SimpleString)


def catches_import_error(node: cst.Try | cst.TryStar) -> bool:
    for handler in node.handlers:
        kind = handler.type
        names: list[cst.BaseExpression] = []
        if isinstance(kind, cst.Tuple):
            names = [element.value for element in kind.elements]
        elif kind is not None:
            names = [kind]
        if any(isinstance(n, cst.Name) and n.value in _IMPORT_ERRORS for n in names):
            return True
    return False


def branch_guard(ctx: PythonContext, node: cst.CSTNode, attribute: str) -> bool:
    """Whether the child `attribute` of `node` runs only under CUDA (or a working import)."""
    if isinstance(node, (cst.If, cst.IfExp)) and attribute in ("body", "orelse"):
        test = node.test
        if attribute == "body":
            return is_cuda_probe(ctx, test)
        inner = _negated(test)
        return inner is not None and is_cuda_probe(ctx, inner)
    if isinstance(node, (cst.Try, cst.TryStar)) and attribute == "body":
        return catches_import_error(node)
    if attribute == "right" and isinstance(node, cst.BooleanOperation):
        # `torch.cuda.is_available() and <right>`, `not x.is_cuda or <right>`
        if isinstance(node.operator, cst.And):
            return is_cuda_probe(ctx, node.left)
        inner = _negated(node.left)
        return inner is not None and is_cuda_probe(ctx, inner)
    return False

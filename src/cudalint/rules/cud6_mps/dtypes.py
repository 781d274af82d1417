"""Which expressions are float64 (or complex128): torch dtypes, numpy arrays (data/float64.toml)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

import libcst as cst

from cudalint.rules import args as call_args
from cudalint.rules import tables
from cudalint.rules.assignments import TracksAssignments

_MAX_DEPTH = 8


@dataclass(frozen=True)
class Float64Table:
    torch_float64: Mapping[str, str]  # dtype name -> the dtype to suggest
    torch_other: frozenset[str]
    builtins: Mapping[str, str]
    tensor_types: frozenset[str]
    to_float64: frozenset[str]
    to_other: frozenset[str]
    keeping: frozenset[str]
    from_numpy: frozenset[str]
    numpy_float64: frozenset[str]
    numpy_float64_strings: frozenset[str]
    constructors: frozenset[str]
    from_data: frozenset[str]
    generators: frozenset[str]
    generator_methods: frozenset[str]
    keeping_functions: frozenset[str]
    keeping_methods: frozenset[str]
    joining: frozenset[str]


@cache
def table() -> Float64Table:
    data = tables.load("float64.toml")
    torch, numpy = data["torch"], data["numpy"]
    return Float64Table(
        torch_float64=torch["float64"],
        torch_other=frozenset(torch["other"]),
        builtins=torch["builtins"],
        tensor_types=frozenset(torch["tensor_types"]),
        to_float64=frozenset(torch["to_float64"]),
        to_other=frozenset(torch["to_other"]),
        keeping=frozenset(torch["keeping"]),
        from_numpy=frozenset(torch["from_numpy"]),
        numpy_float64=frozenset(numpy["float64"]),
        numpy_float64_strings=frozenset(numpy["float64_strings"]),
        constructors=frozenset(numpy["constructors"]),
        from_data=frozenset(numpy["from_data"]),
        generators=frozenset(numpy["generators"]),
        generator_methods=frozenset(numpy["generator_methods"]),
        keeping_functions=frozenset(numpy["keeping_functions"]),
        keeping_methods=frozenset(numpy["keeping_methods"]),
        joining=frozenset(numpy["joining"]),
    )


def float64_dtype(rule: TracksAssignments, expr: cst.BaseExpression) -> str | None:
    """The dtype to suggest when `expr` is a torch float64/complex128 dtype (or Python's
    `float`/`complex`, which torch reads as those), else None."""
    expr, _ = rule.resolve(expr)
    name = rule.ctx.qualname(expr)
    if name is None:
        return None
    if name.startswith("torch."):
        suggestion = table().torch_float64.get(name.removeprefix("torch."))
        return None if suggestion is None else f"torch.{suggestion}"
    if isinstance(expr, cst.Name) and name in table().builtins:
        return f"torch.{table().builtins[name]}"
    return None


def other_dtype(rule: TracksAssignments, expr: cst.BaseExpression) -> bool:
    """`torch.float32`, `torch.int64`, ...: a dtype that is not float64."""
    name = rule.ctx.qualname(expr)
    return name is not None and name.removeprefix("torch.") in table().torch_other \
        and name.startswith("torch.")


def float64_tensor_type(rule: TracksAssignments, expr: cst.BaseExpression) -> bool:
    """`torch.DoubleTensor` or the string "torch.DoubleTensor"."""
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return isinstance(value, str) and value.removeprefix("torch.") in table().tensor_types
    name = rule.ctx.qualname(expr)
    return name is not None and name.startswith("torch.") \
        and name.removeprefix("torch.") in table().tensor_types


def numpy_float64_dtype(rule: TracksAssignments, expr: cst.BaseExpression) -> bool:
    """`np.float64`, `float`, `"float64"`, `"f8"`: a numpy dtype that is float64/complex128."""
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value in table().numpy_float64_strings
    return rule.ctx.qualname(expr) in table().numpy_float64


def float64_array(rule: TracksAssignments, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether `expr` is a numpy array that is float64 because numpy made it so by default
    (`np.ones(3)`, `np.random.rand(3)`, `np.array([0.5])`) or was asked to (`astype(float)`)."""
    if depth > _MAX_DEPTH:
        return False
    expr, _ = rule.resolve(expr)
    if isinstance(expr, cst.Call):
        return _float64_call(rule, expr, depth)
    if isinstance(expr, cst.Attribute) and expr.attr.value == "T":
        return float64_array(rule, expr.value, depth + 1)
    if isinstance(expr, cst.Subscript):
        return float64_array(rule, expr.value, depth + 1)
    if isinstance(expr, cst.BinaryOperation):
        return float64_array(rule, expr.left, depth + 1) \
            or float64_array(rule, expr.right, depth + 1)
    return False


def _float64_call(rule: TracksAssignments, call: cst.Call, depth: int) -> bool:
    name = rule.ctx.call_name(call)
    dtype = call_args.keyword(call.args, "dtype")
    if name in table().constructors:
        return dtype is None or numpy_float64_dtype(rule, dtype.value)
    if name in table().from_data or name in table().joining:
        if dtype is not None:
            return numpy_float64_dtype(rule, dtype.value)
        data = call_args.positional(call.args, 0)
        return data is not None and _holds_float64(rule, data.value, depth + 1)
    if name in table().keeping_functions:
        first = call_args.positional(call.args, 0)
        return first is not None and float64_array(rule, first.value, depth + 1)
    if not isinstance(call.func, cst.Attribute):
        return False
    method, receiver = call.func.attr.value, call.func.value
    if method == "astype":
        first = call_args.positional(call.args, 0) or dtype
        return first is not None and numpy_float64_dtype(rule, first.value)
    if method in table().keeping_methods:
        return float64_array(rule, receiver, depth + 1)
    if method in table().generator_methods:
        generator, _ = rule.resolve(receiver)
        return isinstance(generator, cst.Call) \
            and rule.ctx.call_name(generator) in table().generators
    return False


def _holds_float64(rule: TracksAssignments, expr: cst.BaseExpression, depth: int) -> bool:
    """`[0.5, 1]`, `[[1.0], [2.0]]`, `(-0.5,)`: a literal container with a float literal; or a
    sequence of arrays one of which is float64 (`[np.ones(3), a]`, `[np.random.rand(3) for _
    in xs]`, a name assigned one of these), as `np.stack` and `np.array` read them."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.Float):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return isinstance(expr.expression, cst.Float)
    if isinstance(expr, (cst.List, cst.Tuple)):
        return any(_holds_float64(rule, element.value, depth + 1) for element in expr.elements)
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        return _holds_float64(rule, expr.elt, depth + 1)
    if isinstance(expr, cst.Name):
        value, _ = rule.resolve(expr)
        return value is not expr and _holds_float64(rule, value, depth + 1)
    return float64_array(rule, expr, depth + 1)

"""Recognising CUDA device strings and where they are used as a device (CUD101, CUD103)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.walk.guards import names_a_device
from cudalint.rules import args as call_args

if TYPE_CHECKING:
    from cudalint.engine.walk.context import PythonContext

_INDEXED = re.compile(r"cuda:(\d+)")
_PERCENT = re.compile(r"cuda:%[dis]")
_FORMAT = re.compile(r"cuda:\{0?\}")


@dataclass(frozen=True)
class DeviceString:
    """A CUDA device string expression: `node` evaluates to "cuda" or "cuda:<index>"."""

    node: cst.BaseExpression
    index: cst.BaseExpression | None  # None for a bare "cuda"

    @property
    def bare(self) -> bool:
        return self.index is None


def _string_value(node: cst.CSTNode) -> str | None:
    """A plain string's value, also of an f-string without placeholders (`f"cuda:0"`)."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.FormattedString) and all(
            isinstance(part, cst.FormattedStringText) for part in node.parts):
        return "".join(part.value for part in node.parts)  # type: ignore[attr-defined]
    return None


def parse_device_string(node: cst.CSTNode) -> DeviceString | None:
    """`"cuda"`, `"cuda:0"`, `f"cuda"`, `f"cuda:{r}"`, `"cuda:%d" % r`,
    `"cuda:{}".format(r)`, `"cuda:" + str(r)`."""
    if type(node) is cst.SimpleString and "cuda" not in node.value and "\\" not in node.value:
        return None  # spells no CUDA device (evaluating every string of a module costs)
    value = _string_value(node)
    if value is not None:
        if value == "cuda":
            return DeviceString(node, None)  # type: ignore[arg-type]
        match = _INDEXED.fullmatch(value)
        return DeviceString(node, cst.Integer(match.group(1))) if match else None  # type: ignore[arg-type]
    if isinstance(node, cst.FormattedString):
        return _from_fstring(node)
    if isinstance(node, cst.BinaryOperation):
        return _from_binary(node)
    if isinstance(node, cst.Call):
        return _from_format_call(node)
    return None


def _from_fstring(node: cst.FormattedString) -> DeviceString | None:
    parts = node.parts
    if len(parts) != 2:
        return None
    text, expression = parts
    if not isinstance(text, cst.FormattedStringText) or text.value != "cuda:":
        return None
    if not isinstance(expression, cst.FormattedStringExpression):
        return None
    if expression.conversion is not None or expression.format_spec is not None:
        return None
    return DeviceString(node, expression.expression)


def _from_binary(node: cst.BinaryOperation) -> DeviceString | None:
    left = _string_value(node.left)
    if left is None:
        return None
    if isinstance(node.operator, cst.Modulo) and _PERCENT.fullmatch(left):
        right = node.right
        if isinstance(right, cst.Tuple) and len(right.elements) == 1:
            right = right.elements[0].value
        return DeviceString(node, right)
    if isinstance(node.operator, cst.Add) and left == "cuda:":
        return DeviceString(node, _unwrap_str(node.right))
    return None


def _from_format_call(node: cst.Call) -> DeviceString | None:
    func = node.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "format":
        return None
    template = _string_value(func.value)
    if template is None or not _FORMAT.fullmatch(template) or len(node.args) != 1:
        return None
    return DeviceString(node, node.args[0].value)


def _unwrap_str(node: cst.BaseExpression) -> cst.BaseExpression:
    """`str(rank)` -> `rank`: pick_device takes the index as an int or a string of digits."""
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)
            and node.func.value == "str" and len(node.args) == 1):
        return node.args[0].value
    return node


def is_device_name(target: cst.BaseExpression) -> bool:
    """`device`, `DEVICE`, `self.device`, `args.train_device`."""
    if isinstance(target, cst.Name):
        return names_a_device(target.value)
    if isinstance(target, cst.Attribute):
        return names_a_device(target.attr.value)
    return False


def is_cpu_device(ctx: PythonContext, node: cst.BaseExpression) -> bool:
    """`"cpu"` or `torch.device("cpu")`."""
    if _string_value(node) == "cpu":
        return True
    return (
        isinstance(node, cst.Call)
        and ctx.call_name(node) == "torch.device"
        and len(node.args) == 1
        and _string_value(node.args[0].value) == "cpu"
    )


def cuda_device_expr(ctx: PythonContext, node: cst.BaseExpression) -> DeviceString | None:
    """A CUDA device as a string, or `torch.device(<cuda string>[, index])` (then `node` is
    the torch.device call, and the result is a torch.device)."""
    if isinstance(node, cst.Call) and ctx.call_name(node) == "torch.device":
        first = call_args.positional(node.args, 0)
        parsed = parse_device_string(first.value) if first else None
        if parsed is None:
            return None
        second = call_args.positional(node.args, 1) or call_args.keyword(node.args, "index")
        if parsed.bare and second is not None:
            return DeviceString(node, second.value)
        return DeviceString(node, parsed.index)
    return parse_device_string(node)


def makes_torch_device(ctx: PythonContext, node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and ctx.call_name(node) == "torch.device"


def device_replacement(
    ctx: PythonContext, index: cst.BaseExpression | None, *, as_device: bool
) -> cst.BaseExpression:
    """`pick_device(index)`, wrapped in `str(...)` where the original was a str: a fix never
    changes an expression's type."""
    call = ctx.helper_call("pick_device", [cst.Arg(index)] if index is not None else [])
    if as_device:
        return call
    return cst.Call(func=cst.Name("str"), args=[cst.Arg(call)])

"""Whether an expression names the CPU, an accelerator, or something we cannot tell."""

from __future__ import annotations

import enum

import libcst as cst

from cudalint.rules import args as call_args
from cudalint.rules.assignments import TracksAssignments

_ACCELERATORS = ("cuda", "mps", "xpu")
# Names that hold a device (`device`, `self.dev`, `local_rank`): `.to(rank)` moves to the
# current accelerator.
_DEVICE_NAMES = frozenset({"dev", "gpu", "rank", "local_rank", "gpu_id"})
_MAX_DEPTH = 6


class Placement(enum.Enum):
    CPU = "cpu"  # the CPU, or no device at all (`device=None`)
    DEVICE = "device"  # an accelerator, or a device chosen at run time
    UNKNOWN = "unknown"  # not evidently a device (`.to(other_tensor)`)


def placement(rule: TracksAssignments, expr: cst.BaseExpression, depth: int = 0) -> Placement:
    if depth > _MAX_DEPTH:  # `device = torch.device(device)`
        return Placement.UNKNOWN
    expr, _ = rule.resolve(expr)
    if isinstance(expr, cst.SimpleString):
        return _from_string(expr.evaluated_value)
    if isinstance(expr, cst.Integer):
        return Placement.DEVICE
    if isinstance(expr, cst.Name) and expr.value == "None":
        return Placement.CPU
    if isinstance(expr, cst.IfExp):
        sides = {placement(rule, expr.body, depth + 1), placement(rule, expr.orelse, depth + 1)}
        return Placement.CPU if sides == {Placement.CPU} else max(sides, key=_rank)
    if isinstance(expr, cst.Call):
        return _from_call(rule, expr, depth)
    leaf = _leaf(expr)
    if leaf is None or "dtype" in leaf:
        return Placement.UNKNOWN
    if "device" in leaf or leaf in _DEVICE_NAMES or leaf.endswith("_dev"):
        return Placement.DEVICE
    return Placement.UNKNOWN


def is_off_cpu(rule: TracksAssignments, expr: cst.BaseExpression) -> bool:
    """For a `device=` argument: anything but the CPU (or None) may be an accelerator."""
    return placement(rule, expr) is not Placement.CPU


def _from_string(value: object) -> Placement:
    if not isinstance(value, str):
        return Placement.UNKNOWN
    kind = value.split(":", 1)[0]
    if kind == "cpu":
        return Placement.CPU
    return Placement.DEVICE if kind in _ACCELERATORS else Placement.UNKNOWN


def _from_call(rule: TracksAssignments, call: cst.Call, depth: int) -> Placement:
    if rule.ctx.call_name(call) == "torch.device":
        first = call_args.positional(call.args, 0) or call_args.keyword(call.args, "type")
        if first is not None and placement(rule, first.value, depth + 1) is Placement.CPU:
            return Placement.CPU
        return Placement.DEVICE
    leaf = _leaf(call.func)
    return Placement.DEVICE if leaf is not None and "device" in leaf else Placement.UNKNOWN


def _leaf(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Name):
        return expr.value.lower()
    if isinstance(expr, cst.Attribute):
        return expr.attr.value.lower()
    return None


def _rank(value: Placement) -> int:
    return {Placement.CPU: 0, Placement.UNKNOWN: 1, Placement.DEVICE: 2}[value]

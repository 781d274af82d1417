"""Building blocks of the torch.cuda API rules' replacements (CUD104-CUD106)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from cudalint.engine.walk.context import PythonContext


def keyword_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    """`name=value`, spaced as PEP 8 wants keyword arguments."""
    return cst.Arg(
        value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )


def pick_device(ctx: PythonContext) -> cst.Call:
    return ctx.helper_call("pick_device")


def pick_device_type(ctx: PythonContext) -> cst.Attribute:
    """`pick_device().type`: the device type as a str, where torch wants `"cuda"`."""
    return cst.Attribute(value=pick_device(ctx), attr=cst.Name("type"))


def fits(params: Sequence[str], args: Sequence[cst.Arg]) -> bool:
    """Whether a call's arguments can be passed to a function taking `params`."""
    if any(arg.star for arg in args):
        return False
    positional = [arg for arg in args if arg.keyword is None]
    keywords = {arg.keyword.value for arg in args if arg.keyword is not None}
    return len(positional) <= len(params) and keywords <= set(params[len(positional):])


def unique(*groups: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for group in groups for name in group))

"""Replacement expressions shared by the device rules' fixes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from cudalint.engine.context import PythonContext


def device_replacement(
    ctx: PythonContext, index: cst.BaseExpression | None, *, as_device: bool
) -> cst.BaseExpression:
    """`pick_device(index)`, wrapped in `str(...)` where the original was a str: a fix never
    changes an expression's type."""
    call = ctx.helper_call("pick_device", [cst.Arg(index)] if index is not None else [])
    if as_device:
        return call
    return cst.Call(func=cst.Name("str"), args=[cst.Arg(call)])

"""Reading and rewriting call arguments, shared by the device rules."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst


def keyword(args: Sequence[cst.Arg], name: str) -> cst.Arg | None:
    return next((a for a in args if a.keyword is not None and a.keyword.value == name), None)


def positional(args: Sequence[cst.Arg], index: int) -> cst.Arg | None:
    plain = [a for a in args if a.keyword is None and not a.star]
    return plain[index] if index < len(plain) else None


def has_star(args: Sequence[cst.Arg]) -> bool:
    return any(a.star for a in args)


def split_device_argument(
    args: Sequence[cst.Arg], *, positional: int, keyword: str
) -> tuple[cst.BaseExpression | None, list[cst.Arg]] | None:
    """The device argument's value and the other arguments; None when `*args` hides it."""
    if has_star(args):
        return None
    plain = [a for a in args if a.keyword is None]
    chosen = plain[positional] if positional < len(plain) else None
    if chosen is None:
        chosen = next((a for a in args if a.keyword and a.keyword.value == keyword), None)
    rest = [a for a in args if a is not chosen]
    return (chosen.value if chosen else None), rest


def respaced(args: Sequence[cst.Arg]) -> list[cst.Arg]:
    """Arguments for a rebuilt call: the last one loses its trailing comma."""
    if not args:
        return []
    return [*args[:-1], args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]


def replace_message(module: cst.Module, replacement: cst.CSTNode) -> str:
    """"Replace with `<the code written>`", on one line, shortened past 70 characters."""
    code = " ".join(module.code_for_node(replacement).split())
    if len(code) > 70:
        code = code[:67] + "..."
    return f"Replace with `{code}`"

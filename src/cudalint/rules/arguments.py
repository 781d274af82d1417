"""Reading call arguments and the string literals in them, for the CUD2 and CUD3 rules."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cudalint.engine.walk.visiting import find_all


def argument(call: cst.Call, position: int | None, keyword: str) -> cst.BaseExpression | None:
    """The value passed as `keyword=`, or else at `position` (None: keyword only)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    if position is None:
        return None
    plain = [a for a in call.args if a.keyword is None and not a.star]
    return plain[position].value if position < len(plain) else None


def string_value(expr: cst.BaseExpression | None) -> str | None:
    if isinstance(expr, cst.SimpleString) and isinstance(expr.evaluated_value, str):
        return expr.evaluated_value
    return None


def string_parts(expr: cst.CSTNode) -> Iterator[str]:
    """The literal text in `expr`: plain strings and the fixed parts of f-strings, anywhere
    inside it (`os.path.join(root, "k.cu")`, `f"{lib}/libcudart.so"`)."""
    for node in find_all(expr, (cst.SimpleString, cst.FormattedStringText)):
        if isinstance(node, cst.FormattedStringText):
            yield node.value
        elif isinstance(node, cst.SimpleString) and (value := string_value(node)) is not None:
            yield value

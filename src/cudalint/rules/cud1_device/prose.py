"""Where a string is prose (a message, a log line, a run name), not a device."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from cudalint.engine.walk.context import PythonContext

# Calls whose arguments are messages: print, logging, warnings, progress bars, CLIs.
_MESSAGE_CALLS = frozenset(
    {
        "print", "debug", "info", "warning", "warn", "error", "exception", "critical", "log",
        "echo", "secho", "write", "set_description", "set_postfix_str", "add_text", "markdown",
    }
)
# Keyword arguments that name or describe things rather than select a device.
_PROSE_KEYWORDS = frozenset(
    {
        "name", "run_name", "help", "desc", "description", "title", "label", "tag", "tags",
        "msg", "message", "comment", "notes", "group", "job_type", "project", "prefix",
    }
)


def _call_leaf(call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def in_prose(ctx: PythonContext) -> bool:
    """The node being visited is part of a message, a raise, a docstring, a dict key, an
    index or a comparison, up to its statement."""
    child: cst.CSTNode | None = ctx.stack[-1] if ctx.stack else None
    if isinstance(ctx.parent(), cst.Expr):
        return True  # a bare string statement: a docstring
    for node in ctx.ancestors():
        if isinstance(node, (cst.Raise, cst.Assert)):
            return True
        if isinstance(node, cst.Call) and _call_leaf(node) in _MESSAGE_CALLS:
            return True
        if isinstance(node, cst.Arg) and node.keyword is not None \
                and node.keyword.value in _PROSE_KEYWORDS:
            return True
        if isinstance(node, cst.DictElement) and node.key is child:
            return True
        if isinstance(node, (cst.SubscriptElement, cst.Comparison, cst.FormattedString)):
            return True
        if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
        child = node
    return False

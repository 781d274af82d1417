"""LibCST's parse without its per-node checks.

LibCST checks each node as it is built (`CSTNode.__post_init__` calls `_validate`), the nodes its
own parser builds from a file included: a fifth of a parse, for nodes that are valid by
construction (LibCST's source says as much). `parse_module` here skips those checks for the
parse it runs, in this thread only; nodes built anywhere else (a fix's replacement, a rule's
expression, another thread) are checked as before.
"""

from __future__ import annotations

import threading

import libcst as cst
from libcst._nodes.base import CSTNode

_state = threading.local()


def _post_init(self: CSTNode) -> None:
    if not getattr(_state, "trusted", False):
        self._validate()


def parse_module(source: bytes | str) -> cst.Module:
    """`cst.parse_module(source)`, its nodes unchecked."""
    _install()
    _state.trusted = True
    try:
        return cst.parse_module(source)
    finally:
        _state.trusted = False


def _install() -> None:
    if CSTNode.__post_init__ is not _post_init:
        CSTNode.__post_init__ = _post_init  # type: ignore[method-assign]

"""Branches that run only when an optional CUDA library (or build) is there.

The engine lowers findings under `torch.cuda.is_available()` and `try/except ImportError`; code
also tests for the library itself: `if HAS_FLASH_ATTN:`, `if is_triton_available():`,
`if find_spec("cupy") is not None:`, `if CUDA_HOME is not None:`, `if TYPE_CHECKING:`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.walk.visiting import find_all

if TYPE_CHECKING:
    from cudalint.engine.walk.context import PythonContext


# Import-name parts too common to say which library a test is about (`cuda.core`: `use_core`).
_VAGUE = frozenset({"core", "bindings", "cute", "ops", "fn"})


def library_words(modules: Iterable[str]) -> tuple[str, ...]:
    """What a test for these modules mentions: `flash_attn` -> "flash_attn" (matching
    `is_flash_attn_2_available`), `nvidia.dali` -> "dali"."""
    words = {module.rsplit(".", 1)[-1].lower() for module in modules}
    return tuple(sorted(words - _VAGUE))


def under_check(ctx: PythonContext, words: Iterable[str]) -> bool:
    """True when the node being visited runs only if a test naming one of `words`
    (lower-case substrings of its names and strings) passed."""
    words = tuple(words)
    stack = ctx.stack
    for parent, child in itertools.pairwise(stack):
        if not isinstance(parent, (cst.If, cst.IfExp)) or not _mentions(parent.test, words):
            continue
        positive = _polarity(parent.test)
        if (child is parent.body and positive) or (child is parent.orelse and not positive):
            return True
    return False


def _mentions(test: cst.BaseExpression, words: tuple[str, ...]) -> bool:
    tokens: list[str] = []
    for node in find_all(test, (cst.Name, cst.SimpleString)):
        if isinstance(node, cst.Name):
            tokens.append(node.value.lower())
        elif isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
            tokens.append(node.evaluated_value.lower())
    return any(word in token for token in tokens for word in words)


def _polarity(test: cst.BaseExpression) -> bool:
    """False for a test that passes when the thing is missing: `not X`, `X is None`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return not _polarity(test.expression)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        comparator = target.comparator
        if isinstance(comparator, cst.Name) and comparator.value == "None":
            return not isinstance(target.operator, (cst.Is, cst.Equal))
    return True

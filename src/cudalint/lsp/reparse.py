"""The `ast` tree of each version of an edited document, made from the previous version's: the
top-level statements an edit did not touch are kept (moved down or up when the edit added or
removed lines), and only the lines between them are parsed, alone. CPython's parse of a
2,000-line file takes 30-50 ms; of one function, well under one.

Parsed alone, those lines give what a parse of the whole file gives them, or an error (then the
whole file is parsed): the lines before them end a complete top-level statement (no backslash
continues the last), and the lines after them start one at column 0, so the tokenizer is at
the top level at both ends. An unclosed bracket or string, or an indented first line (a body
that would continue the statement above), makes the lines alone fail to parse. A file with a
coding cookie, and lines holding a `__future__` import, are parsed whole.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from itertools import takewhile

from cudalint.engine.reading.ast_parse import parse_quietly
from cudalint.engine.reading.depth import too_deep

_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=]")


class Reparser:
    """The last version's lines and tree of one document (the worker thread's only)."""

    def __init__(self) -> None:
        self._lines: list[bytes] = []
        self._tree: ast.Module | None = None
        self._deep: list[bool] = []  # per top-level statement: nested too deep (`too_deep`)
        self.spliced = 0  # versions made from the previous one, for the tests

    @property
    def shallow(self) -> bool:
        """Whether the last tree parsed is no deeper than cudalint checks."""
        return not any(self._deep)

    def parse(self, source: bytes) -> ast.Module:
        """`source` as `parse_quietly` reads it; raises what it raises."""
        lines = source.splitlines(keepends=True)
        spliced = self._spliced(lines)
        if spliced is None:
            self._tree = None  # a failing parse leaves nothing to splice from
            tree = parse_quietly(source)
            deep = _depths(tree.body, source)
        else:
            tree, deep = spliced
            self.spliced += 1
        self._lines, self._tree, self._deep = lines, tree, deep
        return tree

    def statements(self, source: bytes) -> list[tuple[int, int]] | None:
        """The first and last rows of each top-level statement of `source`; None when it does
        not parse."""
        try:
            tree = self.parse(source)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        return [(_first(node), node.end_lineno or node.lineno) for node in tree.body]

    def _spliced(self, lines: list[bytes]) -> tuple[ast.Module, list[bool]] | None:
        old, tree = self._lines, self._tree
        if tree is None or any(_COOKIE.match(line) for line in lines[:2]):
            return None
        same = _common_prefix(old, lines)
        if same == len(old) == len(lines):
            return tree, self._deep
        tail = _common_suffix(old, lines, same)
        body = tree.body
        spans = [(_first(node), node.end_lineno or node.lineno) for node in body]
        # Statements wholly in the unchanged head, and in the unchanged tail (1-based lines).
        head = sum(1 for _ in takewhile(lambda span: span[1] <= same, spans))
        rest = len(old) - tail
        keep_tail = sum(1 for span in spans[head:] if span[0] > rest)
        if not _separable(spans, head, len(spans) - keep_tail, old):
            return None
        start = spans[head - 1][1] if head else 0  # the lines re-parsed follow this one
        moved = len(lines) - len(old)
        stop = (spans[len(spans) - keep_tail][0] - 1 + moved) if keep_tail else len(lines)
        middle = b"".join(lines[start:stop])
        if b"__future__" in middle:
            return None
        try:
            parsed = parse_quietly(middle)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        deep = [*self._deep[:head], *_depths(parsed.body, middle),
                *self._deep[len(body) - keep_tail:]]
        if start:
            _shift(parsed.body, start)
        tail_nodes = body[len(body) - keep_tail:]
        if moved:
            _shift(tail_nodes, moved)
        return ast.Module(body=[*body[:head], *parsed.body, *tail_nodes], type_ignores=[]), deep


def _separable(spans: Sequence[tuple[int, int]], head: int, tail: int,
               old: Sequence[bytes]) -> bool:
    """Whether the kept head ends, and the kept tail starts, on a line of its own, and no
    backslash carries the head's last line on."""
    if head and old[spans[head - 1][1] - 1].rstrip(b"\r\n").endswith(b"\\"):
        return False
    if head and head < len(spans) and spans[head][0] <= spans[head - 1][1]:
        return False
    return not (0 < tail < len(spans) and spans[tail][0] <= spans[tail - 1][1])


def _common_prefix(old: Sequence[bytes], new: Sequence[bytes]) -> int:
    count = 0
    for before, after in zip(old, new, strict=False):
        if before != after:
            break
        count += 1
    return count


def _common_suffix(old: Sequence[bytes], new: Sequence[bytes], prefix: int) -> int:
    count = 0
    limit = min(len(old), len(new)) - prefix
    while count < limit and old[-1 - count] == new[-1 - count]:
        count += 1
    return count


def _depths(statements: list[ast.stmt], source: bytes) -> list[bool]:
    """Whether each top-level statement (read from `source`) is nested too deep: as deep in a
    module of its own as in the whole one."""
    if not too_deep(ast.Module(body=statements, type_ignores=[]), source):
        return [False] * len(statements)
    return [too_deep(ast.Module(body=[node], type_ignores=[]), source) for node in statements]


def _first(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None)
    return decorators[0].lineno if decorators else node.lineno


def _shift(nodes: list[ast.stmt], rows: int) -> None:
    """Move the nodes and everything in them `rows` lines down (`ast.increment_lineno` at a
    third of its cost)."""
    stack: list[ast.AST] = list(nodes)
    while stack:
        node = stack.pop()
        if hasattr(node, "lineno"):  # not `arguments`, `comprehension`, `withitem`...
            node.lineno += rows
            end = getattr(node, "end_lineno", None)
            if end is not None:
                node.end_lineno = end + rows  # type: ignore[attr-defined]
        for name in node._fields:
            value = getattr(node, name)
            if isinstance(value, list):
                stack.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST) and value._fields:
                stack.append(value)

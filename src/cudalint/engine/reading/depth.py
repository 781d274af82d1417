"""How deep LibCST would nest a module, read from CPython's `ast` before LibCST reads it.

LibCST's parser and visitors recurse: its native parser overflows the C stack (a segfault, not
an exception) and its visitors Python's recursion limit on code that CPython compiles. The depth
that counts is LibCST's, which is `ast`'s but for three chains `ast` keeps flat: a boolean chain
(`a and b and ...`, one `BoolOp`, is one `BooleanOperation` inside another per operator), the
`for`s of a comprehension (each `CompFor` holds the next) and an implicit string concatenation
(`"a" "b" ...`, one `Constant`, is one `ConcatenatedString` inside another per piece).
`deeper_than` counts those too; `parse_module` parses with LibCST only what is no deeper than
cudalint checks.
"""

from __future__ import annotations

import ast
import io
import tokenize
import warnings
from collections.abc import Iterator
from itertools import accumulate
from typing import TypeGuard

import libcst as cst

# AST depth beyond which LibCST's recursive parser and visitors fail or slow to minutes
# (199 nested calls, a 5,000-long attribute chain); the deepest file in torch is 94 levels (43
# as `ast` nests it: the rest is a boolean chain).
MAX_DEPTH = 120
TOO_DEEP = f"code nested more than {MAX_DEPTH} levels deep; cudalint does not check this file"
BOM = b"\xef\xbb\xbf"

# The `ast` nodes that hold nothing, and that no question of the first pass is about (`Load`,
# `Add`): a walk need not enter them.
HOLDING_NOTHING = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)


class TooDeep(RecursionError):
    """A source nested deeper than cudalint checks, refused before LibCST reads it: a
    RecursionError, as LibCST's own overflow is, so that whoever handles one handles both."""


def parse_module(source: str) -> cst.Module:
    """`cst.parse_module(source)` of a source no deeper than cudalint checks. Raises TooDeep
    for a deeper one, and what `ast.parse` raises for one CPython refuses (SyntaxError,
    ValueError), before LibCST's parser can overflow the stack on it."""
    _check(source, "exec")
    return cst.parse_module(source)


def parse_expression(source: str) -> cst.BaseExpression:
    """`cst.parse_expression(source)`, checked as `parse_module` checks a module."""
    _check(source, "eval")
    return cst.parse_expression(source)


def _check(source: str, mode: str) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source, mode=mode)
    except MemoryError as error:  # CPython's parser, on some deep nestings
        raise TooDeep(TOO_DEEP) from error
    if too_deep(tree, source.encode("utf-8", "surrogatepass")):
        raise TooDeep(TOO_DEEP)


def too_deep(tree: ast.AST, data: bytes) -> bool:
    """Whether `tree` (read from `data`) is nested deeper than cudalint checks (MAX_DEPTH)."""
    return deeper_than(tree, MAX_DEPTH, data)


def deeper_than(tree: ast.AST, limit: int, data: bytes,
                skipped: frozenset[int] = frozenset()) -> bool:
    """Whether the tree is deeper than `limit` as LibCST nests it. Each level of an expression
    takes at least one character of its text (`-x`, `a.b`, `f(x)`, `and b`, `"b"`), and so
    does each level of a statement (a block's header, an `except`), an argument or a pattern,
    but for a statement that is an expression and nothing else (one more level): a node whose
    text is too short to reach the limit is not walked, which leaves most of a file's nodes
    alone; nor is a context or an operator (`Load`, `Add`), which holds nothing. `skipped`: the
    ids of nodes not to walk (methods LibCST does not read)."""
    data = data.removeprefix(BOM)  # `ast` counts the first line's columns after it
    starts = list(accumulate(map(len, data.splitlines(keepends=True)), initial=0))
    stack = [(tree, 1)]
    parts: set[int] = set()  # an f-string's parts: no string of their own
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.BoolOp):  # n operands: n - 1 operations, one in the other
            depth += len(node.values) - 2
        elif _string(node):  # n pieces: n - 1 concatenations, one in the other
            if id(node) not in parts \
                    and depth + _pieces(node, limit - depth, data, starts) - 1 > limit:
                return True
            if isinstance(node, ast.JoinedStr):  # (Python 3.11 puts them where it stands)
                parts.update(id(part) for part in node.values if isinstance(part, ast.Constant))
        elif isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            parts.add(id(node.format_spec))
        for name in node._fields:
            value = getattr(node, name, None)
            below = depth + 1
            for child in value if isinstance(value, list) else (value,):
                if not isinstance(child, ast.AST):
                    continue
                if below > limit:
                    return True
                if not isinstance(child, HOLDING_NOTHING) and id(child) not in skipped:
                    margin = _margin(type(child))
                    if margin is None or below + _span(child, starts) + margin > limit:  # type: ignore[arg-type]
                        stack.append((child, below))
                if name == "generators":  # each `for` of a comprehension holds the next
                    below += 1
    return False


def _string(node: ast.AST) -> TypeGuard[ast.Constant | ast.JoinedStr]:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)))


def _pieces(node: ast.expr, room: int, data: bytes, starts: list[int]) -> int:
    """How many string literals make the string `node` (`"a" f"{b}"`: 2), where they might be
    more than `room` + 1 (each piece has two quotes at least; else 1); where the tokenizer
    cannot read its text alone (its columns count the bytes of another encoding), as many as
    its quotes might make."""
    segment = _segment(node, data, starts)
    quotes = segment.count(b'"') + segment.count(b"'")
    if quotes < 2 * (room + 2):
        return 1
    try:
        return sum(1 for _ in _outer_strings(b"(" + segment + b"\n)\n"))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError, LookupError):
        return quotes // 2


def _segment(node: ast.expr, data: bytes, starts: list[int]) -> bytes:
    end_line, end_column = node.end_lineno, node.end_col_offset
    last = len(starts) - 1
    if end_line is None or end_column is None or end_line > last:
        return data[starts[min(node.lineno, last + 1) - 1]:]
    return data[starts[node.lineno - 1] + node.col_offset:starts[end_line - 1] + end_column]


_OPENING = {getattr(tokenize, name) for name in ("FSTRING_START", "TSTRING_START")
            if hasattr(tokenize, name)}
_CLOSING = {getattr(tokenize, name) for name in ("FSTRING_END", "TSTRING_END")
            if hasattr(tokenize, name)}


def _outer_strings(text: bytes) -> Iterator[tokenize.TokenInfo]:
    """The string literals of `text` outside every f-string's replacement fields (Python 3.12
    tokenizes an f-string into parts, its fields' strings among them)."""
    inside = 0
    for token in tokenize.tokenize(io.BytesIO(text).readline):
        if token.type in _CLOSING:
            inside -= 1
        elif token.type in _OPENING:
            if not inside:
                yield token
            inside += 1
        elif token.type == tokenize.STRING and not inside:
            yield token


# How many levels more than the characters of its text a node of each kind may hold below it
# (`deeper_than`); the kinds without a position (`arguments`, `withitem`) are walked.
_MARGINS: dict[type[ast.AST], int] = {ast.expr: 3, ast.stmt: 4, ast.arg: 4, ast.keyword: 4,
                                      ast.alias: 4, ast.excepthandler: 4, ast.pattern: 4}
Positioned = ast.expr | ast.stmt | ast.arg | ast.keyword | ast.alias | ast.excepthandler \
    | ast.pattern
_KIND_MARGINS: dict[type[ast.AST], int | None] = {}


def _margin(kind: type[ast.AST]) -> int | None:
    if kind not in _KIND_MARGINS:
        _KIND_MARGINS[kind] = next((margin for base, margin in _MARGINS.items()
                                    if issubclass(kind, base)), None)
    return _KIND_MARGINS[kind]


def _span(node: Positioned, starts: list[int]) -> int:
    """At least the number of characters of the node's text (a function's or class's from
    its first decorator)."""
    end_line, end_column = node.end_lineno, node.end_col_offset
    if end_line is None or end_column is None or end_line > len(starts) - 1:
        return 1 << 30
    decorators = getattr(node, "decorator_list", None)
    first: Positioned = decorators[0] if decorators else node
    if end_line == first.lineno:
        return end_column - first.col_offset
    return starts[end_line - 1] - starts[first.lineno - 1] + end_column

"""`ast` for the first pass, with Python objects only for the statements it looks into.

`ast.parse` spends most of its time making a Python object of each node, and the first pass
(cudalint.engine.first_pass.outline) hides most top-level functions and classes whole: of those it
needs where they start and end, and their names. `parse` splits a file into its top-level
statements (a line at column 0 that can start one; decorators go with what they decorate),
reads the others with `ast.parse`, and stands a placeholder of the same class in for each
function or class whose text names nothing the first pass looks for: its position and name,
checked by CPython's parser alone (`_symtable` builds no Python object of a node). Whatever
else is asked of a placeholder (its body, its decorators) is read then, from its own lines.

Each piece is read alone, in order from the top, so each starts where the tokenizer is clean
(no open bracket or string): where lines `s` to `k - 1` parse alone, line `k` starts a
statement in the whole file too. Where a piece does not parse it is read with the next, a
few times; past that, or on anything odd (a BOM, a coding cookie other than UTF-8, a form feed,
a `__future__` import, lines ended by a lone carriage return), `parse` answers None and the
caller reads the whole file as before (which also gives CPython's own syntax error).
"""

from __future__ import annotations

import _symtable
import ast
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from cudalint.engine.reading.ast_parse import parse_quietly

# A line at column 0 that may start a top-level statement: not blank, no comment, no closing
# bracket, no clause of the compound statement before it.
_START = re.compile(rb"^(?!(?:else|elif|except|finally)(?![A-Za-z0-9_\x80-\xff]))[^\s#)\]}]",
                    re.MULTILINE)
_HEAD = re.compile(rb"(async[ \t]+)?(def|class)[ \t]+([A-Za-z_][A-Za-z0-9_]*)"
                   rb"(?![A-Za-z0-9_\x80-\xff])")
_COOKIE = re.compile(rb"[ \t]*#.*?coding[:=][ \t]*([-\w.]+)")
_UTF8 = frozenset({b"utf-8", b"utf8"})
# How many times a piece that does not parse alone is read again with the next one.
_RETRIES = 3


class Unreadable(Exception):
    """A placeholder's lines did not read as the node it stands for: read the file whole."""


class Placeholder:
    """A top-level function or class not read yet: `lineno`, `col_offset`, `end_lineno`,
    `name` (and `end_col_offset`, `decorator_list` where they were plain to see) are set;
    asking for any other field reads its lines (`Unreadable` when they do not read as it)."""

    first_line: int  # where its decorators start
    lineno: int
    end_lineno: int | None
    _lines: list[bytes]
    _pending: bool

    def __getattr__(self, name: str) -> object:
        if name.startswith("_") or not _filled(self):
            raise AttributeError(name)
        return getattr(self, name)


def _filled(node: Placeholder) -> bool:
    """Fill `node` if it is pending: whether it was."""
    if not node.__dict__.get("_pending"):
        return False
    node._pending = False
    _fill(node)
    return True


class _Pending:
    """A field for which `ast`'s class holds a default (`returns = None`, `end_col_offset =
    None`): a placeholder reads its lines before it answers."""

    def __init__(self, name: str, default: object) -> None:
        self.name, self.default = name, default

    def __get__(self, node: Placeholder | None, owner: type | None = None) -> object:
        if node is None:  # asked of the class: `ast`'s default
            return self.default
        _filled(node)
        try:
            return node.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None


class LazyFunctionDef(ast.FunctionDef, Placeholder):
    pass


class LazyAsyncFunctionDef(ast.AsyncFunctionDef, Placeholder):
    pass


class LazyClassDef(ast.ClassDef, Placeholder):
    pass


for _kind in (LazyFunctionDef, LazyAsyncFunctionDef, LazyClassDef):
    for _name in (*_kind._fields, *_kind._attributes):
        if hasattr(_kind, _name):
            setattr(_kind, _name, _Pending(_name, getattr(_kind, _name)))


def is_placeholder(node: ast.AST) -> bool:
    return isinstance(node, Placeholder)


def _fill(node: Placeholder) -> None:
    """Give `node` every field of the node its lines read as."""
    first, last = node.first_line, node.end_lineno or node.lineno
    text = b"\n" * (first - 1) + b"".join(node._lines[first - 1 : last])
    try:
        tree = parse_quietly(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise Unreadable(str(error)) from None
    real = tree.body[0] if len(tree.body) == 1 else None
    if real is None or not isinstance(node, type(real)) or not _agrees(node, real):
        raise Unreadable(f"line {node.lineno} does not read as its placeholder")
    for field in (*real._fields, *real._attributes):
        setattr(node, field, getattr(real, field, None))


def _agrees(node: Placeholder, real: ast.stmt) -> bool:
    known = node.__dict__
    decorators = getattr(real, "decorator_list", None)
    return all(getattr(real, name, None) == known[name] for name in
               ("name", "lineno", "col_offset", "end_lineno", "end_col_offset",
                "decorator_list") if name in known) \
        and (decorators[0].lineno if decorators else real.lineno) == node.first_line


_Kind = type[LazyFunctionDef] | type[LazyAsyncFunctionDef] | type[LazyClassDef]


@dataclass
class _Piece:
    first: int  # its lines, 1-based
    last: int
    head: int = 0  # a function's or class's: the line of its `def` or `class`
    kind: _Kind | None = None  # None: read with ast.parse
    name: str = ""
    end: int = 0  # a function's or class's: its last line neither blank nor a comment alone


def parse(data: bytes, looked_into: Callable[[bytes], bool]) -> ast.Module | None:
    """The module, with a placeholder for each top-level function and class whose text
    `looked_into` refuses; None where the whole file must be read (nothing to stand in for,
    or anything odd)."""
    if _odd(data):
        return None
    lines = data.splitlines(keepends=True)
    pieces = _pieces(data, lines, looked_into)
    if not any(piece.kind for piece in pieces):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        body = _read(pieces, lines)
    return None if body is None else ast.Module(body=body, type_ignores=[])


def _odd(data: bytes) -> bool:
    if data.startswith(b"\xef\xbb\xbf") or b"\f" in data or b"barry_as_FLUFL" in data \
            or re.search(rb"\r(?!\n)", data):
        return True
    for line in data.splitlines()[:2]:
        cookie = _COOKIE.match(line)
        if cookie is not None:
            return cookie[1].lower().replace(b"_", b"-") not in _UTF8
    return False


def _starts(data: bytes) -> list[int]:
    """The lines that may start a top-level statement."""
    found = []
    line, last = 1, 0
    for match in _START.finditer(data):
        position = match.start()
        line += data.count(b"\n", last, position)
        last = position
        found.append(line)
    return found


def _pieces(data: bytes, lines: list[bytes], looked_into: Callable[[bytes], bool]
            ) -> list[_Piece]:
    """The pieces from one possible statement start to the next; a function's or class's
    with its decorators, marked to stand in for (`kind`) where `looked_into` refuses it."""
    starts = _starts(data)
    ends = [*starts[1:], len(lines) + 1]
    pieces = []
    index = 0
    while index < len(starts):
        head = index
        while head < len(starts) and lines[starts[head] - 1].startswith(b"@"):
            head += 1
        last = ends[min(head, len(starts) - 1)] - 1
        piece = _Piece(starts[index], last)
        found = _HEAD.match(lines[starts[head] - 1]) if head < len(starts) else None
        # judged by the lines its placeholder spans, the text the first pass reads of it
        end = _end(lines, piece.first, last) if found is not None else None
        if found is not None and end is not None \
                and not looked_into(b"".join(lines[piece.first - 1 : end])):
            piece.head, piece.name, piece.end = starts[head], found[3].decode(), end
            piece.kind = LazyClassDef if found[2] == b"class" \
                else LazyAsyncFunctionDef if found[1] else LazyFunctionDef
        pieces.append(piece)
        index = head + 1
    return pieces


def _read(pieces: list[_Piece], lines: list[bytes]) -> list[ast.stmt] | None:
    """The statements of the pieces, each read alone in order; None where one does not."""
    body: list[ast.stmt] = []
    first = 1  # where the pieces to read with ast.parse start
    retries = 0
    for piece in pieces:
        node = _placeholder(piece, lines) if piece.kind is not None else None
        if node is None:
            continue
        if first < piece.first:
            read = _statements(lines, first, piece.first - 1)
            if read is None:
                retries += 1
                if retries > _RETRIES:
                    return None
                continue  # read with the pieces after it
            body.extend(read)
        body.append(node)
        first = piece.last + 1
    if first <= len(lines):
        read = _statements(lines, first, len(lines))
        if read is None:
            return None
        body.extend(read)
    return body


def _statements(lines: list[bytes], first: int, last: int) -> list[ast.stmt] | None:
    try:
        return ast.parse(b"\n" * (first - 1) + b"".join(lines[first - 1 : last])).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _placeholder(piece: _Piece, lines: list[bytes]) -> ast.stmt | None:
    """The placeholder of a function's or class's piece, where its lines parse alone as one
    such statement named `piece.name` starting at `piece.head` (no other statement can
    start in them: each would be at column 0, so a piece of its own)."""
    assert piece.kind is not None
    end = piece.end
    if end < piece.head:
        return None
    try:
        table = _symtable.symtable(b"".join(lines[piece.first - 1 : end]), "<piece>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
        return None
    kind = _symtable.TYPE_CLASS if piece.kind is LazyClassDef else _symtable.TYPE_FUNCTION
    line = piece.head - piece.first + 1
    if not any(child.name == piece.name and child.lineno == line and child.type == kind
               for child in table.children):
        return None
    node = piece.kind.__new__(piece.kind)
    node.__dict__.update(name=piece.name, lineno=piece.head, col_offset=0, end_lineno=end,
                         first_line=piece.first, _lines=lines, _pending=True)
    if piece.head == piece.first:
        node.decorator_list = []
    column = _end_column(lines[end - 1])
    if column is not None:
        node.end_col_offset = column
    return node


def _end(lines: list[bytes], first: int, last: int) -> int | None:
    """The last line of lines `first` to `last` that is neither blank nor a comment alone
    (as its text reads: that the statement's lines parse up to it alone proves it)."""
    while last >= first:
        text = lines[last - 1].lstrip(b" \t")
        if text.strip(b"\r\n") and not text.startswith(b"#"):
            return last
        last -= 1
    return None


def _end_column(line: bytes) -> int | None:
    """Where the last token of a statement's last line ends; None where its text does not
    make it plain (a comment after a string: the `#` may be in the string)."""
    line = line.rstrip(b"\r\n")
    comment = line.find(b"#")
    if comment >= 0:
        if b"'" in line or b'"' in line:
            return None
        line = line[:comment]
    line = line.rstrip(b" \t")
    return None if line.endswith(b"\\") else len(line)

"""Between cudalint's 1-based rows and code-point columns and LSP's 0-based positions, whose
`character` counts code units of the negotiated encoding (UTF-16 unless the client offers
another)."""

from __future__ import annotations

import re

from lsprotocol import types

from cudalint.finding import Position

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"

# LSP ends lines at \n, \r\n and \r only; str.splitlines() would also split at \f, \v, \x85...
_LINE_END = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The document's lines as LSP counts them, without their endings ("a\\n" has two)."""
    return _LINE_END.split(text)


def code_units(text: str, encoding: str) -> int:
    """How many code units of `encoding` `text` takes."""
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", errors="surrogatepass"))
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def to_lsp(lines: list[str], where: Position, encoding: str) -> types.Position:
    """A 1-based row and code-point column as an LSP position; past the end clamps to the end."""
    line = where.row - 1
    if line >= len(lines):
        return end_of(lines, encoding)
    text = lines[max(line, 0)]
    column = min(max(where.column - 1, 0), len(text))
    return types.Position(line=max(line, 0), character=code_units(text[:column], encoding))


def to_lsp_range(lines: list[str], start: Position, end: Position, encoding: str) -> types.Range:
    return types.Range(start=to_lsp(lines, start, encoding), end=to_lsp(lines, end, encoding))


def end_of(lines: list[str], encoding: str) -> types.Position:
    """The position after the document's last character."""
    return types.Position(line=len(lines) - 1, character=code_units(lines[-1], encoding))


def overlaps(first: types.Range, second: types.Range) -> bool:
    """Whether two ranges share a position (touching counts: a cursor at a range's end)."""
    return _key(first.start) <= _key(second.end) and _key(second.start) <= _key(first.end)


def _key(position: types.Position) -> tuple[int, int]:
    return position.line, position.character

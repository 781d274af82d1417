"""Between cudalint's 1-based rows and code-point columns and LSP's 0-based positions, whose
`character` counts code units of the negotiated encoding (UTF-16 unless the client offers
another), as lsprotocol's objects (lsp/forms.py makes their JSON forms)."""

from __future__ import annotations

from lsprotocol import types

from cudalint.finding import Position
from cudalint.lsp import forms


def to_lsp(lines: list[str], where: Position, encoding: str) -> types.Position:
    """A 1-based row and code-point column as an LSP position; past the end clamps to the end."""
    return types.Position(**forms.position(lines, where, encoding))


def end_of(lines: list[str], encoding: str) -> types.Position:
    """The position after the document's last character."""
    return types.Position(**forms.end_position(lines, encoding))


def overlaps(first: types.Range, second: types.Range) -> bool:
    """Whether two ranges share a position (touching counts: a cursor at a range's end)."""
    return _key(first.start) <= _key(second.end) and _key(second.start) <= _key(first.end)


def _key(position: types.Position) -> tuple[int, int]:
    return position.line, position.character

"""The edit behind "Disable CODE for this line": append `  # noqa: CODE`, or add the code to
the line's `# noqa: ...` list, on a row where the engine looks for it (a finding's first or
last row; in a Dockerfile, the comment line above the instruction)."""

from __future__ import annotations

import bisect
import io
import re
import tokenize
from collections.abc import Sequence

from cudalint.finding import Edit, Finding, Position
from cudalint.formats import dockerfile
from cudalint.kinds import FileKind
from cudalint.lsp.lines import split_lines

_NOQA_CODES = re.compile(r"#\s*noqa:\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)",
                         re.IGNORECASE)
# Kinds whose findings cannot be silenced by a `#` comment on their line.
_NO_COMMENTS = frozenset({FileKind.CUDA_SOURCE, FileKind.SHARED_LIBRARY, FileKind.NOTEBOOK})


Tokens = tuple[set[int] | None, dict[int, int]]  # see _line_ends


class Noqa:
    """The noqa edits of one text, which is split once for all its findings, and tokenized
    once; with `statements` (the first and last rows of each top-level statement of a Python
    text, in order), only the statements that hold a finding are tokenized (each starts where
    the tokenizer is at the top level, so its tokens are those of the whole text)."""

    def __init__(self, text: str, kind: FileKind,
                 statements: Sequence[tuple[int, int]] | None = None) -> None:
        self.text, self.kind = text, kind
        self.lines = split_lines(text)
        self._statements = statements
        self._starts = [first for first, _ in statements or ()]
        self._tokens: dict[tuple[int, int], Tokens] = {}  # by the rows tokenized

    def edit(self, finding: Finding) -> Edit | None:
        """The edit that silences `finding` with a noqa comment, or None where none can."""
        if finding.code is None or self.kind in _NO_COMMENTS:
            return None
        if self.kind is FileKind.DOCKERFILE:
            return _dockerfile_edit(self.text, self.lines, finding.location.row, finding.code)
        if self.kind is FileKind.PYTHON:
            row, comment_column = self._python_row(finding)
        else:
            row, comment_column = finding.location.row, 0
        if row is None or row > len(self.lines):
            return None
        return _line_edit(self.lines[row - 1], row, comment_column, finding.code)

    def _python_row(self, finding: Finding) -> tuple[int | None, int | None]:
        """The first of the finding's rows that a comment can end (not inside a multi-line
        string, not continued by a backslash), and where that row's comment starts (None: it
        has none)."""
        ends, comments = self._tokens_at(finding.location.row)
        if ends is None:
            return finding.location.row, 0
        for row in (finding.location.row, finding.end_location.row):
            if row in ends:
                return row, comments.get(row)
        return None, None

    def _tokens_at(self, row: int) -> Tokens:
        """The tokens of the statement holding `row`, or of the whole text."""
        index = bisect.bisect_right(self._starts, row) - 1
        span = self._statements[index] if self._statements and index >= 0 else None
        first, last = span if span is not None and row <= span[1] else (1, len(self.lines))
        if (first, last) not in self._tokens:
            whole = (first, last) == (1, len(self.lines))
            text = self.text if whole else "\n".join(self.lines[first - 1:last]) + "\n"
            self._tokens[first, last] = _line_ends(text, first - 1)
        return self._tokens[first, last]


def _line_ends(text: str, below: int = 0) -> Tokens:
    """Rows whose end the tokenizer sees (NEWLINE/NL), and the column of each row's comment,
    the text's first row being row `below + 1`; None when the text does not tokenize."""
    ends: set[int] = set()
    comments: dict[int, int] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.NEWLINE, tokenize.NL):
                ends.add(token.start[0] + below)
            elif token.type == tokenize.COMMENT:
                comments[token.start[0] + below] = token.start[1]
    except (tokenize.TokenError, SyntaxError):
        return None, {}
    return ends, comments


def _line_edit(line: str, row: int, comment_column: int | None, code: str) -> Edit:
    match = None if comment_column is None else _NOQA_CODES.search(line, comment_column)
    if match is not None:
        at = Position(row, match.end("codes") + 1)
        return Edit(f", {code}", at, at)
    content = line.rstrip()
    return Edit(f"  # noqa: {code}", Position(row, len(content) + 1),
                Position(row, len(line) + 1))


def _dockerfile_edit(text: str, lines: list[str], row: int, code: str) -> Edit | None:
    """Docker reads `#` as a comment only at the start of a line: the noqa comment goes on
    its own line above the instruction, as the engine reads it there."""
    instruction = next((i for i in dockerfile.parse(text)
                        if i.row <= row <= max(i.row, i.last_row)), None)
    if instruction is None or instruction.row > len(lines):
        return None
    first = instruction.row
    above = lines[first - 2] if first >= 2 else ""
    match = _NOQA_CODES.search(above) if above.lstrip().startswith("#") else None
    if match is not None:
        at = Position(first - 1, match.end("codes") + 1)
        return Edit(f", {code}", at, at)
    line = lines[first - 1]
    indent = line[: len(line) - len(line.lstrip())]
    newline = "\r\n" if "\r\n" in text else "\n"
    at = Position(first, 1)
    return Edit(f"{indent}# noqa: {code}{newline}", at, at)

"""CMake command invocations (`name(args...)`), following the CMake language's lexical rules:
`#` and `#[[...]]` comments, quoted and bracket arguments, commands spanning lines, and command
names matched case-insensitively."""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

from cudalint.formats.shell import closing

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACKET_OPEN = re.compile(r"\[(=*)\[")
_UNQUOTED_END = re.compile(r"[\s()#\"]")


@dataclass(frozen=True)
class Argument:
    value: str
    row: int
    column: int


@dataclass(frozen=True)
class Invocation:
    name: str  # lower case
    row: int
    column: int
    arguments: tuple[Argument, ...]

    def values(self) -> list[str]:
        return [argument.value for argument in self.arguments]


class _Text:
    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def position(self, offset: int) -> tuple[int, int]:
        index = bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index] + 1

    def skip_comment(self, i: int) -> int:
        """Past a `#` comment starting at i (a bracket comment may span lines)."""
        bracket = _BRACKET_OPEN.match(self.text, i + 1)
        if bracket:
            close = self.text.find("]" + bracket.group(1) + "]", bracket.end())
            return len(self.text) if close < 0 else close + len(bracket.group(1)) + 2
        newline = self.text.find("\n", i)
        return len(self.text) if newline < 0 else newline


@lru_cache(maxsize=8)
def invocations(text: str) -> tuple[Invocation, ...]:
    source = _Text(text)
    found: list[Invocation] = []
    i, size = 0, len(text)
    while i < size:
        c = text[i]
        if c == "#":
            i = source.skip_comment(i)
            continue
        name = _NAME.match(text, i) if c.isalpha() or c == "_" else None
        if name is None:
            i += 1
            continue
        after = name.end()
        while after < size and text[after] in " \t":
            after += 1
        if after >= size or text[after] != "(":
            i = name.end()
            continue
        arguments, i = _arguments(source, after + 1)
        row, column = source.position(name.start())
        found.append(Invocation(name.group().lower(), row, column, tuple(arguments)))
    return tuple(found)


def _arguments(source: _Text, i: int) -> tuple[list[Argument], int]:
    """The arguments after an opening parenthesis; returns them and the index past `)`."""
    text, size = source.text, len(source.text)
    arguments: list[Argument] = []
    depth = 1
    while i < size:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c == "#":
            i = source.skip_comment(i)
        elif c == "(":
            depth, i = depth + 1, i + 1
        elif c == ")":
            depth, i = depth - 1, i + 1
            if depth == 0:
                return arguments, i
        elif c == '"':
            end = closing(text, i + 1, size)
            end = size if end < 0 else end
            arguments.append(Argument(text[i + 1 : end], *source.position(i)))
            i = end + 1
        elif (bracket := _BRACKET_OPEN.match(text, i)) is not None:
            close = text.find("]" + bracket.group(1) + "]", bracket.end())
            close = size if close < 0 else close
            arguments.append(Argument(text[bracket.end() : close], *source.position(i)))
            i = close + len(bracket.group(1)) + 2
        else:
            boundary = _UNQUOTED_END.search(text, i)
            stop = size if boundary is None else boundary.start()
            arguments.append(Argument(text[i:stop], *source.position(i)))
            i = stop
    return arguments, size



"""Parse only what the rules must see.

LibCST's parse costs about ten times CPython's, and most functions of a large file name nothing
the rules look for. The first pass (cudalint.engine.first_pass.outline) finds those units: top-level
functions and classes, methods of top-level classes, and the other top-level statements outside
every flow a rule follows (a table of data after the imports). They are blanked before LibCST reads
the file: each unit becomes one bytes literal over its lines (`blank`), which keeps every other
line, and so every position, where it was. What whole-module questions
still need to know about the blanked units (their names, the words they use, the names they
assign) comes from `ast`, in `Hidden`.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.first_pass.lazy_ast import Placeholder
from cudalint.engine.first_pass.prefilter import BLOCK_FIELDS, identifiers
from cudalint.engine.reading import depth

if TYPE_CHECKING:
    from typing import Protocol

    class Run(Protocol):
        """A run of table elements LibCST did not read (cudalint.engine.first_pass.runs, which
        builds on this module): the module-wide questions read its words."""

        @property
        def words(self) -> frozenset[bytes]: ...

# A line as `ast` counts them (a form feed ends none), with its ending.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_UNITS = (*_FUNCTIONS, ast.ClassDef)
_CLAUSES = (ast.ExceptHandler, ast.match_case)  # a `handlers`/`cases` entry: a block's owner


@dataclass(frozen=True, eq=False)
class Unit:
    """A top-level function or class, or a method of a top-level class (what `units_of`
    finds); or another top-level statement the first pass hides."""

    first: int  # its first line (1-based; its decorators included)
    last: int  # its last line
    text: bytes  # lines first..last as they are in the file
    node: ast.stmt = field(repr=False)
    top_level: bool = True

    @property
    def name(self) -> str:
        return getattr(self.node, "name", "")

    @cached_property
    def words(self) -> frozenset[bytes]:
        return frozenset(identifiers(self.text))

    @cached_property
    def methods(self) -> tuple[Unit, ...]:
        """A top-level class's methods (read when asked: a class `ast` has not read yet,
        cudalint.engine.first_pass.lazy_ast, is read then)."""
        if not self.top_level or not isinstance(self.node, ast.ClassDef):
            return ()
        lines = [b""] * (self.first - 1) + self.text.splitlines(keepends=True)
        return tuple(_unit(m, lines, top_level=False) for m in self.node.body
                     if isinstance(m, _FUNCTIONS))


def units_of(data: bytes, tree: ast.Module) -> list[Unit]:
    """The top-level functions and classes of the module `tree` was parsed from, in order."""
    lines = data.splitlines(keepends=True)
    return [_unit(node, lines) for node in tree.body if isinstance(node, _UNITS)]


def leaves(units: Iterable[Unit]) -> Iterator[Unit]:
    """The units a cache can hold: functions, methods, and classes without methods."""
    for unit in units:
        if unit.methods:
            yield from unit.methods
        else:
            yield unit


def _unit(node: ast.stmt, lines: list[bytes], *, top_level: bool = True) -> Unit:
    first = first_line(node)
    last = node.end_lineno or node.lineno
    return Unit(first, last, b"".join(lines[first - 1 : last]), node, top_level)


def first_line(node: ast.stmt) -> int:
    if isinstance(node, Placeholder):  # its decorators are not read yet
        return node.first_line
    decorators = getattr(node, "decorator_list", None)
    return decorators[0].lineno if decorators else node.lineno


def blank(data: bytes, units: Iterable[Unit]) -> bytes:
    """`data` with each unit folded into one statement on its lines, at its indentation: a
    triple-quoted bytes literal that opens on its first line and closes at the start of its
    last, the lines between emptied; `b""` for a one-line unit. LibCST makes an `EmptyLine`
    node (with its whitespace and newline nodes) of every empty line, and a single node of a
    string. A bytes literal is no docstring, so the statement stands in the unit's place as
    the unit would (a method in its class, a function among the imports). Every line ending,
    and so every other line's number and text, is kept."""
    lines = data.splitlines(keepends=True)
    for unit in units:
        head = lines[unit.first - 1]
        indent = head[: len(head) - len(head.lstrip(b" \t\f"))]
        if unit.last == unit.first:
            lines[unit.first - 1] = indent + b'b""' + _ending(head)
            continue
        fold(lines, unit.first, unit.last, indent, _ending(lines[unit.last - 1]))
    return b"".join(lines)


def fold(lines: list[bytes], first: int, last: int, before: bytes, after: bytes,
         pad: int = 0) -> None:
    """Make lines `first` to `last` (1-based, `first` < `last`) one triple-quoted bytes literal:
    `before` and its opening on the first line, the lines between emptied, `pad` blanks and its
    closing, then `after`, on the last. Every line ending is kept."""
    lines[first - 1] = before + b'b"""' + _ending(lines[first - 1])
    for index in range(first, last - 1):
        lines[index] = _ending(lines[index])
    lines[last - 1] = b" " * pad + b'"""' + after


def _ending(line: bytes) -> bytes:
    if line.endswith(b"\r\n"):
        return b"\r\n"
    return line[-1:] if line.endswith((b"\n", b"\r")) else b""


@dataclass(frozen=True)
class Hidden:
    """What the blanked units hold, for the questions about the whole module."""

    units: Collection[Unit] = ()
    text: str = ""  # the whole file's text
    # the runs of tables LibCST did not read (cudalint.engine.first_pass.runs)
    runs: Collection[Run] = ()

    def __bool__(self) -> bool:
        return bool(self.units) or bool(self.runs)

    @cached_property
    def words(self) -> frozenset[str]:
        """Every identifier their text names (a conservative stand-in for their uses)."""
        words = [unit.words for unit in self.units] + [run.words for run in self.runs]
        return frozenset(w.decode() for found in words for w in found)

    @cached_property
    def top_level_names(self) -> frozenset[str]:
        """What their top-level definitions and `name = ...` statements bind (as
        cudalint.engine.walk.context counts the module's)."""
        names: set[str] = set()
        for unit in self.units:
            if not unit.top_level:
                continue
            if isinstance(unit.node, ast.Assign):
                names.update(t.id for t in unit.node.targets if isinstance(t, ast.Name))
            elif unit.name:
                names.add(unit.name)
        return frozenset(names)

    @cached_property
    def assigned(self) -> dict[str, list[ast.expr]]:
        """The values of their `name = ...` statements, at any depth, by name."""
        return _assignments(self.units)

    def assigned_to(self, name: str) -> list[ast.expr]:
        """The values `assigned` holds for `name`, read only from the units naming it (a
        unit `ast` has not read yet is read then: cudalint.engine.first_pass.lazy_ast). A unit whose
        text is not ASCII may spell it otherwise (`ﬁ` is `fi` to `ast`)."""
        if "assigned" in self.__dict__:
            return self.assigned.get(name, [])
        word = name.encode()
        units = [unit for unit in self.units if word in unit.words or not unit.text.isascii()]
        return _assignments(units).get(name, [])

    @cached_property
    def _lines(self) -> list[str]:
        return text_lines(self.text)

    def expression(self, node: ast.expr) -> cst.BaseExpression | None:
        """One of those values as LibCST reads it (with no position in the module)."""
        segment = source_segment(self._lines, node)
        if segment is None:
            return None
        try:
            return depth.parse_expression(f"({segment})")
        except (cst.ParserSyntaxError, SyntaxError, ValueError, RecursionError):
            return None


def _assignments(units: Iterable[Unit]) -> dict[str, list[ast.expr]]:
    """The values of the `name = ...` statements in `units`, at any depth, by name."""
    found: dict[str, list[ast.expr]] = defaultdict(list)
    statements = [unit.node for unit in units]
    while statements:  # statements only: no expression holds an assignment
        node = statements.pop()
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id].append(node.value)
            continue
        for name in BLOCK_FIELDS:
            for inner in getattr(node, name, ()):
                statements.extend(inner.body if isinstance(inner, _CLAUSES) else [inner])
    return dict(found)


def text_lines(text: str) -> list[str]:
    """The lines of `text` as `ast` counts them, with their endings."""
    return _LINE.findall(text)


def source_segment(lines: list[str], node: ast.expr) -> str | None:
    """`ast.get_source_segment` from the text's lines (`text_lines`), split once: that function
    splits the whole text, a character at a time, on every call."""
    end_line, end_column = node.end_lineno, node.end_col_offset
    if end_line is None or end_column is None or end_line > len(lines):
        return None
    first, last = node.lineno - 1, end_line - 1
    if first == last:
        return lines[first].encode()[node.col_offset:end_column].decode()
    head = lines[first].encode()[node.col_offset:].decode()
    tail = lines[last].encode()[:end_column].decode()
    return "".join([head, *lines[first + 1 : last], tail])

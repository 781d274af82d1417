"""Long tables of data in a top-level statement that LibCST need not read element by element.

A module-level table (`op_db = [OpInfo(...), ...]`, `annotated_args = {torch.add: [...], ...}`)
is one statement of thousands of lines; when one of its elements names a term, LibCST reads all
of it, for a few findings. A run of consecutive elements that name nothing the rules look for is
read instead as one starred bytes literal of the same lines (`*b\"\"\"...\"\"\"` in a list, a
tuple or a set, `**b\"\"\"...\"\"\"` in a dict), which keeps every line, and the columns of what
follows, where they were.

Only elements no rule can tell from that literal are hidden: calls in a list, tuple or set
(never a number, a nested display or a string, which rules read inside a table a name holds:
`np.array(TABLE)` holding a float), and dict entries whose key is not a string (a string key
may name a keyword argument in `f(**table)`). A table keeps its first element (a command line's
program is its first element) and so is never empty; nothing binds a name inside a run (no
`:=`). The words of a run stay known to the module-wide questions
(cudalint.engine.first_pass.sparse.Hidden).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from cudalint.engine.first_pass.prefilter import Prefilter, identifiers
from cudalint.engine.first_pass.sparse import fold, text_lines

_CLOSING = b'"""'
MIN_LINES = 8  # a shorter run saves less than it costs to find


@dataclass(frozen=True)
class Run:
    """Consecutive elements of a table, from (line, column) to (line, column): lines 1-based,
    columns as `ast` counts them (UTF-8 bytes), the end after the last element."""

    first: int
    column: int
    last: int
    end_column: int
    text: bytes
    star: bytes  # `*` in a list, a tuple or a set, `**` in a dict

    @cached_property
    def words(self) -> frozenset[bytes]:
        return frozenset(identifiers(self.text))


def runs_of(statement: ast.stmt, lines: Sequence[bytes], prefilter: Prefilter,
            followed: Iterable[bytes]) -> list[Run]:
    """The runs of the table a top-level `name = ...` (or `name: T = ...`) statement assigns,
    whose elements name no term of `prefilter` and no name a rule follows (`followed`)."""
    table = _table(statement)
    if table is None or (statement.end_lineno or 0) - statement.lineno < MIN_LINES:
        return []
    star, value, elements = table
    names = frozenset(followed)

    def hidable(element: _Element) -> bool:
        start, end, kind = element
        if not kind or end.end_lineno is None or end.end_col_offset is None:
            return False
        text = _between(lines, (start.lineno, start.col_offset),
                        (end.end_lineno, end.end_col_offset))
        return not prefilter.matches(text) and names.isdisjoint(identifiers(text))

    found = []
    for group, after in _groups([(s, e, hidable((s, e, k))) for s, e, k in elements], value):
        run = _run(group, after, lines, star)
        if run is not None and run.last - run.first >= MIN_LINES:
            found.append(run)
    return found


_Element = tuple[ast.expr, ast.expr, bool]
# What may stand between two elements of a table, or after its last: a comma, blanks, comments
# (not a parenthesis: a run must not start or end inside one, `(*b"")` is no expression).
_SEPARATOR = re.compile(rb"[ \t\f\r\n\\]*,?(?:[ \t\f\r\n\\]|#[^\r\n]*)*")


def _table(statement: ast.stmt) -> tuple[bytes, ast.expr, list[_Element]] | None:
    """`*` or `**`, the table `statement` assigns, and each of its elements: (where it starts,
    where it ends, whether a run may hold it)."""
    if isinstance(statement, ast.Assign):
        if not all(isinstance(target, ast.Name) for target in statement.targets):
            return None
        value: ast.expr | None = statement.value
    elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        value = statement.value
    else:
        return None
    if isinstance(value, (ast.List, ast.Set)) \
            or (isinstance(value, ast.Tuple) and _bracketed(value)):
        return b"*", value, [(e, e, isinstance(e, ast.Call)) for e in value.elts]
    if isinstance(value, ast.Dict):
        return b"**", value, [(item if key is None else key, item, _hidable_key(key))
                              for key, item in zip(value.keys, value.values, strict=True)]
    return None


def _hidable_key(key: ast.expr | None) -> bool:
    """A key, not `**other`, and not a string (which may name a keyword argument)."""
    return key is not None and not (isinstance(key, ast.Constant) and isinstance(key.value, str))


def _bracketed(value: ast.Tuple) -> bool:
    """A tuple in parentheses: `ast` then starts it at its `(` (3.8+), before its first
    element."""
    return not value.elts or (value.elts[0].lineno, value.elts[0].col_offset) \
        > (value.lineno, value.col_offset)


def _groups(elements: list[_Element], table: ast.expr
            ) -> Iterator[tuple[list[_Element], tuple[int, int]]]:
    """The maximal spans of consecutive elements a run may hold, after the first element, with
    the (line, column) where what follows each starts: the next element, or the table's end."""
    start = 1
    for index in range(1, len(elements) + 1):
        element = elements[index] if index < len(elements) else None
        if element is not None and element[2]:
            continue
        if index > start:
            after = (element[0].lineno, element[0].col_offset) if element is not None \
                else (table.end_lineno or 0, (table.end_col_offset or 1) - 1)
            yield elements[start - 1 : index], after
        start = index + 1


def _run(group: list[_Element], after: tuple[int, int], lines: Sequence[bytes],
         star: bytes) -> Run | None:
    """The run of `group` (its first element is the one before the run); None where it does
    not stand between commas."""
    start, end = group[1][0], group[-1][1]
    before = group[0][1]
    first, last = start.lineno, end.end_lineno
    column, end_column = start.col_offset, end.end_col_offset
    if last is None or end_column is None or end_column < len(_CLOSING) or last > len(lines) \
            or before.end_lineno is None or before.end_col_offset is None:
        return None
    if not _separates(_between(lines, (before.end_lineno, before.end_col_offset),
                               (first, column))) \
            or not _separates(_between(lines, (last, end_column), after)):
        return None
    text = _between(lines, (first, column), (last, end_column))
    if b":=" in text:
        return None
    return Run(first, column, last, end_column, text, star)


def _between(lines: Sequence[bytes], start: tuple[int, int], end: tuple[int, int]) -> bytes:
    """The text from `start` to `end`, (line, column) each."""
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1]:end[1]]
    return b"".join([lines[start[0] - 1][start[1]:], *lines[start[0] : end[0] - 1],
                     lines[end[0] - 1][:end[1]]])


def _separates(text: bytes) -> bool:
    return _SEPARATOR.fullmatch(text) is not None


def blank_runs(data: bytes, runs: Iterable[Run]) -> bytes:
    """`data` with each run read as one starred bytes literal of the same lines, what follows
    it on its last line at the same column."""
    lines = data.splitlines(keepends=True)
    for run in runs:
        fold(lines, run.first, run.last, lines[run.first - 1][:run.column] + run.star,
             lines[run.last - 1][run.end_column:], pad=run.end_column - len(_CLOSING))
    return b"".join(lines)


class Tables:
    """Where the entries of the tables that top-level statements assign start, as `ast` read
    them, for the positions of what an entry holds (cudalint.engine.locate.positions): `statements`,
    the `ast` statement of each LibCST top-level statement; `runs`, those LibCST read as one
    starred literal each; `text`, the module's text."""

    def __init__(self, statements: Sequence[ast.stmt], runs: Iterable[Run], text: str) -> None:
        self._statements = statements
        self._runs = {(run.first, run.column): run for run in runs}
        self._text = text
        self._lines: list[str] | None = None

    def entry_start(self, index: int, chain: Sequence[cst.CSTNode]) -> tuple[int, int] | None:
        """The line and column (in characters) where the entry ending `chain` starts: the
        module's `index`-th statement, its assignment, its table, the entry. None where `ast`
        and LibCST do not read the table alike, or the entry starts with a parenthesis."""
        node = self._statements[index] if index < len(self._statements) else None
        found = None if node is None or len(chain) != 4 else _table(node)
        table, entry = chain[2:] if len(chain) == 4 else (None, None)
        if found is None or not isinstance(table, (cst.List, cst.Tuple, cst.Set, cst.Dict)) \
                or isinstance(table, cst.Dict) != isinstance(found[1], ast.Dict):
            return None
        if not isinstance(entry, (cst.Element, cst.DictElement)):
            return None
        head = entry.key if isinstance(entry, cst.DictElement) else entry.value
        if not _starts_as_ast_does(head):
            return None
        start = self._paired(table.elements, entry, found[2])
        if start is None:
            return None
        if self._lines is None:
            self._lines = text_lines(self._text)
        if start.lineno > len(self._lines):
            return None
        prefix = self._lines[start.lineno - 1].encode()[:start.col_offset]
        try:
            return start.lineno, len(prefix.decode())
        except UnicodeDecodeError:
            return None

    def _paired(self, entries: Sequence[cst.CSTNode], wanted: cst.CSTNode | None,
                elements: list[_Element]) -> ast.expr | None:
        """Where `ast` starts the LibCST entry `wanted`; a run is one LibCST entry."""
        position = 0
        for entry in entries:
            if position >= len(elements):
                return None
            first = elements[position][0]
            run = self._runs.get((first.lineno, first.col_offset))
            if run is not None and isinstance(entry, (cst.StarredElement, cst.StarredDictElement)):
                end = (run.last, run.end_column)
                while position < len(elements) \
                        and (elements[position][0].lineno, elements[position][0].col_offset) < end:
                    position += 1
                continue
            if entry is wanted:
                return first
            position += 1
        return None


def _starts_as_ast_does(head: cst.BaseExpression) -> bool:
    """`ast` starts an expression in parentheses after them, but a tuple at its own `(`."""
    parentheses = len(getattr(head, "lpar", ()))
    return parentheses == 0 or (parentheses == 1 and isinstance(head, cst.Tuple))

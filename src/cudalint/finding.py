"""What a check produces: findings, their locations and their fixes."""

from __future__ import annotations

import enum

from cudalint.record import Record

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from pathlib import Path


class Severity(enum.IntEnum):
    """How badly a finding hurts off CUDA; ordered so that `max()` picks the worst."""

    INFO = 1  # harmless off CUDA
    WARNING = 2  # runs, but wrong or slow off CUDA
    ERROR = 3  # breaks on a Mac

    def lowered(self) -> Severity:
        return Severity(max(self.value - 1, Severity.INFO.value))

    def __str__(self) -> str:
        return self.name.lower()


class Applicability(str, enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


class Category(str, enum.Enum):
    """The decision a finding asks of the user."""

    FIXABLE = "fixable"  # cudalint can rewrite it
    GUARDED = "guarded"  # sits behind a CUDA check or an optional import
    BLOCKER = "blocker"  # breaks off CUDA and needs a person
    ADVISORY = "advisory"  # runs off CUDA; worth a look


# Records (cudalint.record), compared and hashed by value as the frozen dataclasses they were.
class Position(Record):
    """1-based row and column, as ruff reports them; ordered by row, then column."""

    __slots__ = ("column", "row")
    FIELDS = ("row", "column")

    def __init__(self, row: int, column: int) -> None:
        self.row = row
        self.column = column

    def __lt__(self, other: Position) -> bool:
        if other.__class__ is not Position:
            return NotImplemented
        return (self.row, self.column) < (other.row, other.column)

    def __le__(self, other: Position) -> bool:
        if other.__class__ is not Position:
            return NotImplemented
        return (self.row, self.column) <= (other.row, other.column)

    def __gt__(self, other: Position) -> bool:
        if other.__class__ is not Position:
            return NotImplemented
        return (self.row, self.column) > (other.row, other.column)

    def __ge__(self, other: Position) -> bool:
        if other.__class__ is not Position:
            return NotImplemented
        return (self.row, self.column) >= (other.row, other.column)


class Edit(Record):
    """Replace the text between two positions (end exclusive) with `content`."""

    __slots__ = ("content", "end_location", "location")
    FIELDS = ("content", "location", "end_location")

    def __init__(self, content: str, location: Position, end_location: Position) -> None:
        self.content = content
        self.location = location
        self.end_location = end_location


class Fix(Record):
    __slots__ = ("applicability", "edits", "message")
    FIELDS = ("applicability", "message", "edits")

    def __init__(self, applicability: Applicability, message: str,
                 edits: tuple[Edit, ...] = ()) -> None:
        self.applicability = applicability
        self.message = message
        self.edits = edits


# A key of Finding.extra: "safe" (or "unsafe"), set by a check on a finding that `--fix` (or
# `--unsafe-fixes`) makes go with another finding's fix, though it has no such fix of its own
# (cudalint.engine.lint.foreseen).
FIXED_WITH_OTHERS = "fixed-with-others"


class Finding(Record):
    """One reported problem. `code` is None for a file that could not be read or parsed.
    `extra` takes no part in equality."""

    __slots__ = ("cell", "code", "end_location", "extra", "fix", "guarded", "location",
                 "message", "path", "severity")
    FIELDS = ("code", "message", "path", "location", "end_location", "severity", "guarded",
              "fix", "cell", "extra")
    COMPARED = FIELDS[:-1]

    def __init__(self, code: str | None, message: str, path: Path, location: Position,
                 end_location: Position, severity: Severity = Severity.ERROR,
                 guarded: bool = False, fix: Fix | None = None, cell: int | None = None,
                 extra: dict[str, str] | None = None) -> None:
        self.code = code
        self.message = message
        self.path = path
        self.location = location
        self.end_location = end_location
        self.severity = severity
        self.guarded = guarded
        self.fix = fix
        self.cell = cell  # 1-based notebook cell, as ruff reports it
        self.extra = {} if extra is None else extra

    @property
    def category(self) -> Category:
        if self.fix is not None and self.fix.applicability is Applicability.SAFE:
            return Category.FIXABLE
        if self.guarded:
            return Category.GUARDED
        if self.code is None or self.severity is Severity.ERROR:
            return Category.BLOCKER
        return Category.ADVISORY

    @property
    def is_error_line(self) -> bool:
        """True for a file that could not be checked at all (unreadable, not UTF-8, bad syntax)."""
        return self.code is None

    def fails(self, threshold: Severity) -> bool:
        """Whether this finding fails a run (exit 1) that fails on `threshold` and worse (the
        `fail-on` setting): a file that could not be checked always does."""
        return self.code is None or self.severity >= threshold

    def with_guard(self) -> Finding:
        """The same finding behind a CUDA guard: severity lowered one step, never hidden."""
        if self.guarded:
            return self
        return self.replace(guarded=True, severity=self.severity.lowered())

    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (str(self.path), self.cell or 0, self.location.row, self.location.column,
                self.code or "")


# A key of Finding.extra, set on the error line of a file that cudalint itself could not check
# or write (an internal error, a dead worker, a fix not written, a helper it could not write),
# as against the file's own problem (a syntax error, null bytes, a malformed cell): a run with
# one exits 2 in every mode.
UNDONE = "undone"


def error_finding(path: Path, message: str, row: int = 1, column: int = 1, *,
                  undone: bool = False) -> Finding:
    """A file that could not be checked: reported with its path, as ruff reports a syntax
    error. `undone`: cudalint's own failure, not the file's (UNDONE)."""
    where = Position(row, column)
    return Finding(None, message, path, where, where, Severity.ERROR,
                   extra={UNDONE: "yes"} if undone else None)


def rule_url(code: str) -> str:
    """The documentation page of a rule code."""
    return f"https://cudalint.readthedocs.io/en/latest/rules/{code}/"

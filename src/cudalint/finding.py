"""What a check produces: findings, their locations and their fixes."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
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


@dataclass(frozen=True, order=True)
class Position:
    """1-based row and column, as ruff reports them."""

    row: int
    column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between two positions (end exclusive) with `content`."""

    content: str
    location: Position
    end_location: Position


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...] = ()


@dataclass(frozen=True)
class Finding:
    """One reported problem. `code` is None for a file that could not be read or parsed."""

    code: str | None
    message: str
    path: Path
    location: Position
    end_location: Position
    severity: Severity = Severity.ERROR
    guarded: bool = False
    fix: Fix | None = None
    cell: int | None = None  # 1-based notebook cell, as ruff reports it
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

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

    def with_guard(self) -> Finding:
        """The same finding behind a CUDA guard: severity lowered one step, never hidden."""
        if self.guarded:
            return self
        return replace(self, guarded=True, severity=self.severity.lowered())

    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (str(self.path), self.cell or 0, self.location.row, self.location.column,
                self.code or "")


def error_finding(path: Path, message: str, row: int = 1, column: int = 1) -> Finding:
    """A file that could not be checked: reported with its path, as ruff reports a syntax error."""
    where = Position(row, column)
    return Finding(None, message, path, where, where, Severity.ERROR)


def rule_url(code: str) -> str:
    """The documentation page of a rule code."""
    return f"https://cudalint.readthedocs.io/en/latest/rules/{code}/"

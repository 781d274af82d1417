"""Readers for the non-Python files the audit rules check, each giving rows and columns."""

from __future__ import annotations

from cudalint.record import Record


class FormatError(Record):
    """Why a file is not valid YAML or TOML, and where (1-based). (A record: the package is
    imported by every run of a project with a requirements file, for its torch floor.)"""

    __slots__ = ("column", "message", "row")
    FIELDS = ("message", "row", "column")

    def __init__(self, message: str, row: int = 1, column: int = 1) -> None:
        self.message = message
        self.row = row
        self.column = column

"""TOML read with `tomllib`, plus where its strings and keys were written (tomllib keeps no
positions): each is looked up in the text, preferring the table it belongs to."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from cudalint.data import load_toml
from cudalint.formats import FormatError

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_AT = re.compile(r"\(at line (\d+), column (\d+)\)")


@lru_cache(maxsize=8)
def load(text: str) -> dict[str, Any] | FormatError:
    try:
        return load_toml(text)
    except tomllib.TOMLDecodeError as error:
        found = _AT.search(str(error))
        row, column = (int(found.group(1)), int(found.group(2))) if found else (1, 1)
        return FormatError(f"invalid TOML: {_AT.sub('', str(error)).strip()}", row, column)
    except RecursionError:
        return FormatError("invalid TOML: nested too deeply")
    except ValueError as error:  # pragma: no cover - a number load_toml could not spare
        return FormatError(f"invalid TOML: {error}", 1, 1)


@dataclass
class Locator:
    """Finds the row and column of values in a TOML text, each occurrence used once."""

    lines: list[str]
    _used: set[tuple[int, int]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.tables: list[tuple[int, str]] = []  # (0-based row, dotted table name)
        for row, line in enumerate(self.lines):
            match = _HEADER.match(line)
            if match:
                name = re.sub(r"\s*\.\s*", ".", match.group(1)).replace('"', "")
                self.tables.append((row, name))

    def string(self, value: str, table: str) -> tuple[int, int]:
        """Where the string `value` was written, preferably inside `table` (or a sub-table)."""
        pattern = re.compile("[\"']" + re.escape(value) + "[\"']")
        return self._find(pattern, table)

    def key(self, key: str, table: str) -> tuple[int, int]:
        """Where `key = ...` was written inside `table`."""
        pattern = re.compile(r"(?:^|\s|\.)[\"']?" + re.escape(key) + r"[\"']?\s*=")
        row, column = self._find(pattern, table)
        line = self.lines[row - 1] if 0 < row <= len(self.lines) else ""
        start = line.find(key, column - 1)
        return (row, start + 1) if start >= 0 else (row, column)

    def table_row(self, table: str) -> int:
        return next((row + 1 for row, name in self.tables if name == table), 1)

    def _find(self, pattern: re.Pattern[str], table: str) -> tuple[int, int]:
        candidates = []
        for row, line in enumerate(self.lines):
            for match in pattern.finditer(line):
                inside = self._table_at(row).startswith(table)
                start = match.start() + (1 if match.group().startswith((" ", "\t", ".")) else 0)
                candidates.append((not inside, row + 1, start + 1))
        for _, row, column in sorted(candidates):
            if (row, column) not in self._used:
                self._used.add((row, column))
                return row, column
        return self.table_row(table), 1

    def _table_at(self, row: int) -> str:
        name = ""
        for start, table in self.tables:
            if start > row:
                break
            name = table
        return name

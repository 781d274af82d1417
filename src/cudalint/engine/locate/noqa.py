"""Ruff-style suppression comments: `# noqa` (every code) and `# noqa: CUD101, CUD102`."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Sequence

from cudalint.finding import Finding

_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)
_ALL = frozenset({"*"})

NoqaMap = dict[int, frozenset[str]]


def parse_noqa(lines: Sequence[str]) -> NoqaMap:
    """1-based row -> the codes its `# noqa` comment names (`{"*"}` for a bare `# noqa`)."""
    found: NoqaMap = {}
    for row, line in enumerate(lines, start=1):
        if "noqa" not in line and "NOQA" not in line:
            continue
        match = _NOQA.search(line)
        if match is None:
            continue
        codes = match.group("codes")
        found[row] = _ALL if codes is None else frozenset(re.split(r"[\s,]+", codes.upper()))
    return found


def parse_python_noqa(source: str, rows: Iterable[int] | None = None) -> NoqaMap:
    """As parse_noqa, reading only real comments: a `# noqa` inside a string is prose.
    `rows`: the only rows the caller asks about (tokenizing a file costs more than checking
    it when its findings' rows say nothing of noqa)."""
    if "noqa" not in source and "NOQA" not in source:
        return {}
    if rows is not None and not _mentioned(source, rows):
        return {}
    comments = [""] * (source.count("\n") + 2)
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0] - 1] = token.string
    except (tokenize.TokenError, SyntaxError):
        return parse_noqa(_LINE_END.split(source))  # Python's line ends, not str.splitlines'
    return parse_noqa(comments)


def _mentioned(source: str, rows: Iterable[int]) -> bool:
    """Whether one of the 1-based `rows` of `source` says noqa."""
    starts = [0, *(match.end() for match in _LINE_END.finditer(source))]
    for row in rows:
        if 0 < row <= len(starts):
            end = starts[row] if row < len(starts) else len(source)
            line = source[starts[row - 1]:end]
            if "noqa" in line or "NOQA" in line:
                return True
    return False


_LINE_END = re.compile(r"\r\n|\r|\n")


def is_suppressed(finding: Finding, noqa: NoqaMap) -> bool:
    """A finding is suppressed by a matching comment on its first or last row."""
    if finding.code is None:
        return False
    for row in {finding.location.row, finding.end_location.row}:
        codes = noqa.get(row)
        if codes is not None and (codes is _ALL or "*" in codes or finding.code in codes):
            return True
    return False


def unsuppressed(findings: Iterable[Finding], lines: Sequence[str]) -> list[Finding]:
    noqa = parse_noqa(lines)
    if not noqa:
        return list(findings)
    return [finding for finding in findings if not is_suppressed(finding, noqa)]

"""pip's requirement syntax: requirements files, `pip install` arguments, PEP 508 strings."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from cudalint.record import Record

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from packaging.markers import Marker
    from packaging.requirements import Requirement

# Short and long spellings of the options that name where packages come from.
OPTION_NAMES = {
    "-i": "--index-url",
    "--index-url": "--index-url",
    "--extra-index-url": "--extra-index-url",
    "-f": "--find-links",
    "--find-links": "--find-links",
    "-r": "--requirement",
    "--requirement": "--requirement",
    "-c": "--constraint",
    "--constraint": "--constraint",
    "-e": "--editable",
    "--editable": "--editable",
}
# Options allowed after a requirement on the same line (`torch==2.1 --hash=sha256:...`).
_PER_REQUIREMENT = re.compile(r"\s+--?(?:hash|global-option|install-option|config-settings?|C)\b")
_COMMENT = re.compile(r"(^|\s)#.*$")
_OPTION = re.compile(r"(--?[A-Za-z][\w-]*)(?:\s*=\s*|\s+|$)(.*)")
_MACOS = {
    "sys_platform": "darwin",
    "platform_system": "Darwin",
    "os_name": "posix",
    "platform_machine": "arm64",
}


class Line(Record):
    """One logical line of a requirements file: `option` is set for `-i URL`-style lines.
    (A record: every run reads the project's requirements for its torch floor.)"""

    __slots__ = ("column", "option", "row", "text", "value", "value_column")
    FIELDS = ("row", "column", "text", "option", "value", "value_column")

    def __init__(self, row: int, column: int, text: str, option: str | None = None,
                 value: str = "", value_column: int = 0) -> None:
        self.row = row
        self.column = column
        self.text = text
        self.option = option  # the long name: "--index-url"
        self.value = value
        self.value_column = value_column


def read_lines(lines: Sequence[str]) -> Iterator[Line]:
    """The requirements and options of a requirements file, comments and `\\` joins removed,
    each placed where it starts."""
    row = 0
    while row < len(lines):
        start = row
        text = lines[row]
        while text.endswith("\\") and row + 1 < len(lines):
            row += 1
            text = text[:-1] + " " + lines[row].strip()
        row += 1
        text = _COMMENT.sub("", text).rstrip()
        stripped = text.lstrip()
        if not stripped:
            continue
        column = len(text) - len(stripped) + 1
        yield parse_line(start + 1, column, stripped)


def parse_line(row: int, column: int, text: str) -> Line:
    match = _OPTION.fullmatch(text) if text.startswith("-") else None
    if match is None:
        return Line(row, column, _PER_REQUIREMENT.split(text, maxsplit=1)[0].strip())
    name, value = match.group(1), match.group(2).strip()
    offset = text.find(value, len(name)) if value else 0
    return Line(row, column, text, OPTION_NAMES.get(name, name), value, column + offset)


def requirement(text: str) -> Requirement | None:
    """A PEP 508 requirement, or None for paths, bare URLs and nonsense. (packaging is
    imported by the first requirement read: it costs a tenth of a second of start-up.)"""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def excluded_on_macos(marker: Marker | None) -> bool:
    """True when an environment marker keeps a requirement off macOS
    (`sys_platform == "linux"`)."""
    if marker is None:
        return False
    from typing import cast

    from packaging.markers import default_environment

    environment = cast("dict[str, str]", dict(default_environment()))
    environment.update(_MACOS)
    try:
        return not marker.evaluate(environment)
    except Exception:  # an unknown marker variable: assume the requirement applies
        return False

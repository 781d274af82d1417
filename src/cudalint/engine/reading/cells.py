"""A notebook cell read as Python and as shell: its IPython escapes (`%matplotlib inline`,
`!nvidia-smi`, `x = !ls`, `obj?`) masked by placeholder statements in the Python view, so rows
and columns of the Python around them hold, and kept as commands in the shell view. Hands the
notebook checker and the notebook fixes a `Cell`, and `unmasked` puts the escapes back."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from cudalint.engine.reading.ast_parse import parse_quietly

_PLACEHOLDER = "pass  # cudalint-magic-{}"
_PLACEHOLDER_LINE = re.compile(r"^\s*pass  # cudalint-magic-(\d+)\s*$")
_ASSIGNED = r"[\w.,\s\[\]]+=\s*"  # `files = !ls`, `t = %timeit -o f()`
_LINE_MAGIC = re.compile(rf"^\s*(?:[!%?]|{_ASSIGNED}[!%])")
_HELP = re.compile(r"^\s*[\w.]+\?{1,2}\s*$")
_CELL_MAGIC = re.compile(r"^%%(\w+)\s*(\S*)")
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python",
                                 "python3"})
_SHELL_CELL_MAGICS = frozenset({"bash", "sh", "system", "script"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", ""})
# `%env NAME=value` / `%env NAME value` / `%set_env NAME value`: read as `NAME=value`.
_ENV_MAGIC = re.compile(r"^(\s*%(?:env|set_env)\s+)([A-Za-z_]\w*)(?:(\s*=\s*|\s+)(.*))?$")
_SHELL_LINE_MAGIC = re.compile(r"^(\s*%(?:sx|system|sc)\s+)")
_INSTALL_MAGIC = re.compile(r"^(\s*)%(?=(?:pip|conda|mamba|micromamba)\b)")
_BANG = re.compile(rf"^\s*(?:{_ASSIGNED})?!!?")


@dataclass
class Cell:
    """One code cell: its Python view (magics masked) and its shell view (escapes only)."""

    text: str
    python: str | None  # None: not Python (`%%bash`, `%%html`)
    shell: str
    originals: dict[int, str] = field(default_factory=dict)  # placeholder -> masked lines


def cell_text(cell: dict[str, Any]) -> str | None:
    """The cell's text; None when its `source` is neither a string nor a list of strings."""
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    return source if isinstance(source, str) else None


def read_cell(text: str) -> Cell:
    lines = text.split("\n")
    first = _CELL_MAGIC.match(lines[0])
    if first is not None:
        name, argument = first.group(1), first.group(2)
        if name in _SHELL_CELL_MAGICS and (name != "script" or argument in _SHELLS):
            return Cell(text, None, "\n".join(["", *lines[1:]]))
        if name not in _PYTHON_CELL_MAGICS:
            return Cell(text, None, "")
    elif _parses(text):
        return Cell(text, text, "")
    return _masked(text, lines, skip_first=first is not None)


def _parses(text: str) -> bool:
    try:
        parse_quietly(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _masked(text: str, lines: list[str], *, skip_first: bool) -> Cell:
    """The cell with each magic (and its `\\` continuations) replaced by a placeholder in the
    Python view, and kept as a command in the shell view."""
    python: list[str] = []
    shell: list[str] = []
    originals: dict[int, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        first = skip_first and index == 0
        if not first and not (_LINE_MAGIC.match(line) or _HELP.match(line)):
            python.append(line)
            shell.append("")
            index += 1
            continue
        indent = "" if first else line[: len(line) - len(line.lstrip())]
        shell.append("" if first else _shell_line(line))
        while True:
            originals[len(originals)] = lines[index]
            python.append(indent + _PLACEHOLDER.format(len(originals) - 1))
            index += 1
            if index >= len(lines) or not lines[index - 1].rstrip().endswith("\\"):
                break
            shell.append(lines[index])  # a continuation of the command
    return Cell(text, "\n".join(python), "\n".join(shell), originals)


def _shell_line(line: str) -> str:
    """The command of `!cmd`, `x = !cmd`, `%sx cmd`, `%pip ...`, `%env X=1`, at its columns."""
    env = _ENV_MAGIC.match(line)
    if env is not None:
        if env.group(4) is None:
            return ""  # `%env X` reads a variable
        separator = env.group(3) if "=" in env.group(3) else "=" * len(env.group(3))
        return " " * len(env.group(1)) + env.group(2) + separator + env.group(4)
    escape = _BANG.match(line) or _SHELL_LINE_MAGIC.match(line)
    if escape is not None:
        return " " * escape.end() + line[escape.end() :]
    install = _INSTALL_MAGIC.match(line)
    if install is not None:  # `%pip install x` -> ` pip install x`
        return line[: install.end() - 1] + " " + line[install.end() :]
    return ""


def unmasked(text: str, originals: dict[int, str]) -> str | None:
    lines = text.split("\n")
    seen = set()
    for row, line in enumerate(lines):
        match = _PLACEHOLDER_LINE.match(line)
        if match is not None and int(match.group(1)) in originals:
            seen.add(int(match.group(1)))
            lines[row] = originals[int(match.group(1))]
    return "\n".join(lines) if seen == set(originals) else None

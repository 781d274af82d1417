"""Dockerfile instructions, with `\\` continuations, comments, heredocs, and the `ARG` defaults
and `ENV` values each instruction sees.

Docker reads `#` as a comment only at the start of a line, so a suppression comment goes on
the line above the instruction: `noqa_lines` carries it onto every row of that instruction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from cudalint.formats.shell import Command, Segment, Word, expand, read_script

_INSTRUCTION = re.compile(r"\s*([A-Za-z]+)(\s+|$)")
_ESCAPE_DIRECTIVE = re.compile(r"#\s*escape\s*=\s*(\S)", re.IGNORECASE)
_HEREDOC = re.compile(r"<<-?\s*[\"']?(\w+)[\"']?")
_SCRIPTS = frozenset({"RUN", "CMD", "ENTRYPOINT"})


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case: FROM, RUN, ENV, ...
    row: int
    column: int
    pieces: tuple[Segment, ...]  # the arguments, continuation lines joined
    heredocs: tuple[tuple[Segment, ...], ...] = ()  # bodies of `RUN <<EOF`
    last_row: int = 0

    def words(self) -> list[tuple[Word, tuple[int, int]]]:
        """The arguments split as the shell would split them, each with its row and column."""
        return [(word, command.position(word)) for command in read_script([self.pieces])
                for word in command.words]

    def env_pairs(self) -> list[tuple[str, str, tuple[int, int]]]:
        """`ENV A=1 B=2` (and the old `ENV A value`): name, value, where the name is."""
        words = self.words()
        if not words:
            return []
        first, where = words[0]
        if "=" not in first.value:
            return [(first.value, " ".join(word.value for word, _ in words[1:]), where)]
        return [(*_split_assignment(word.value), where) for word, where in words]


def _split_assignment(text: str) -> tuple[str, str]:
    name, _, value = text.partition("=")
    return name, value


@lru_cache(maxsize=8)
def parse(text: str) -> tuple[Instruction, ...]:
    lines = text.splitlines()
    escape = _escape_character(lines)
    instructions: list[Instruction] = []
    row = 0
    while row < len(lines):
        match = _INSTRUCTION.match(lines[row])
        if _is_comment(lines[row]) or not lines[row].strip() or match is None:
            row += 1
            continue
        keyword, start = match.group(1).upper(), row
        pieces, row = _arguments(lines, row, match.end(), escape)
        heredocs: list[tuple[Segment, ...]] = []
        if keyword in _SCRIPTS or keyword == "COPY":
            for delimiter in _HEREDOC.findall("".join(p.text for p in pieces)):
                body, row = _heredoc(lines, row, delimiter)
                heredocs.append(body)
        instructions.append(
            Instruction(keyword, start + 1, match.start(1) + 1, tuple(pieces), tuple(heredocs),
                        row)
        )
    return tuple(instructions)


def _arguments(lines: list[str], row: int, column: int, escape: str,
               ) -> tuple[list[Segment], int]:
    """The pieces of one instruction from `lines[row][column:]` on; returns the next row."""
    pieces: list[Segment] = []
    text, col = lines[row][column:], column
    while True:
        stripped = text.rstrip()
        if not stripped.endswith(escape) or row + 1 >= len(lines):
            pieces.append(Segment(row + 1, col + 1, stripped))
            return pieces, row + 1
        pieces.append(Segment(row + 1, col + 1, stripped[:-1]))
        row += 1
        while row < len(lines) and (_is_comment(lines[row]) or not lines[row].strip()):
            row += 1  # comment and empty lines inside a continuation are dropped
        if row >= len(lines):
            return pieces, row
        text, col = lines[row], 0


def _heredoc(lines: list[str], row: int, delimiter: str) -> tuple[tuple[Segment, ...], int]:
    body = []
    while row < len(lines) and lines[row].strip() != delimiter:
        body.append(Segment(row + 1, 1, lines[row]))
        row += 1
    return tuple(body), row + 1


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _escape_character(lines: list[str]) -> str:
    for line in lines:
        if not line.startswith("#"):
            break
        match = _ESCAPE_DIRECTIVE.match(line)
        if match:
            return match.group(1)
    return "\\"


def script_of(instruction: Instruction) -> tuple[Command, ...]:
    """The shell commands of one instruction, shell and exec forms: none unless it is a
    `RUN`, `CMD` or `ENTRYPOINT` (each of which is a shell of its own)."""
    if instruction.keyword not in _SCRIPTS:
        return ()
    commands = list(read_script([_shell_form(instruction.pieces)]))
    for body in instruction.heredocs:
        commands += read_script((segment,) for segment in body)
    return tuple(commands)


@lru_cache(maxsize=8)
def with_variables(text: str) -> tuple[tuple[Instruction, Mapping[str, str]], ...]:
    """Each instruction of the file with the variables it sees (`variables_at`): read once
    per file for every rule that asks (CUD402's `ENV`, CUD403's `FROM`, the scripts)."""
    instructions = parse(text)
    return tuple(zip(instructions, variables_at(instructions), strict=True))


def variables_at(instructions: Sequence[Instruction]) -> list[dict[str, str]]:
    """For each instruction, the variables the build has set when it comes (what `$NAME` in
    it reads): for a `FROM` line, the `ARG` defaults before the first `FROM`; for any other,
    the `ARG` defaults and `ENV` values before it in its stage. An `ARG NAME` without a value
    in a stage takes the default of that global `ARG`; a stage built `FROM` an earlier one
    (`FROM base AS test`) starts with the values that one ended with; a value may read the
    ones set before it."""
    found: list[dict[str, str]] = []
    global_defaults: dict[str, str] = {}
    stages: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None  # None before the first FROM
    for instruction in instructions:
        found.append(dict(global_defaults if instruction.keyword == "FROM" or current is None
                          else current))
        if instruction.keyword == "FROM":
            words = [word.value for word, _ in instruction.words()
                     if not word.value.startswith("--")]
            current = dict(stages.get(words[0].lower(), {})) if words else {}
            if len(words) >= 3 and words[1].lower() == "as":
                stages[words[2].lower()] = current
        elif instruction.keyword == "ARG":
            for word, _ in instruction.words():
                name, equals, value = word.value.partition("=")
                if current is None:
                    if equals:
                        global_defaults[name] = expand(value, global_defaults)
                elif equals:
                    current[name] = expand(value, current)
                elif name in global_defaults:
                    current[name] = global_defaults[name]
        elif instruction.keyword == "ENV" and current is not None:
            for name, value, _ in instruction.env_pairs():
                current[name] = expand(value, current)
    return found


def _shell_form(pieces: tuple[Segment, ...]) -> tuple[Segment, ...]:
    """The exec form `["nvidia-smi", "-L"]` read as the shell words `"nvidia-smi" "-L"`: JSON
    punctuation becomes spaces, so every column stays where it was."""
    text = "".join(piece.text for piece in pieces).strip()
    if not text.startswith("["):
        return pieces
    try:
        parsed = json.loads(text)
    except ValueError:
        return pieces
    if not isinstance(parsed, list):
        return pieces
    return tuple(Segment(p.row, p.column, _blank_json_punctuation(p.text)) for p in pieces)


def _blank_json_punctuation(text: str) -> str:
    out, quoted, escaped = [], False, False
    for char in text:
        if quoted:
            quoted = not (char == '"' and not escaped)
            escaped = char == "\\" and not escaped
            out.append(char)
        elif char == '"':
            quoted = True
            out.append(char)
        else:
            out.append(" " if char in "[],\t" else char)
    return "".join(out)


def noqa_lines(lines: Sequence[str]) -> list[str]:
    """The file's lines, each instruction row carrying the `# noqa` comment written on the
    line above the instruction (where Docker allows a comment)."""
    out = list(lines)
    for instruction in parse("\n".join(lines)):
        above = instruction.row - 2
        comment = lines[above] if above >= 0 and "noqa" in lines[above].lower() else ""
        if not comment:
            continue
        for row in range(instruction.row - 1, max(instruction.last_row, instruction.row)):
            if row < len(out):
                out[row] = f"{out[row]}  {comment.strip()}"
    return out

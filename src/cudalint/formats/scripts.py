"""The shell commands a file runs, whatever its kind: a shell script's lines, a Makefile's
recipes and `$(shell ...)` calls, a Dockerfile's `RUN`/`CMD`/`ENTRYPOINT`, a CI workflow's
`run:` steps (GitHub jobs and composite actions) and GitLab `script:` lines. The notebook
checker hands its `!` lines and `%%bash` cells over as a shell script.

Read once per file and shared by every rule that looks at commands (CUD401-CUD403, CUD5).
"""

from __future__ import annotations

from functools import lru_cache

from cudalint.formats import dockerfile, makefile
from cudalint.formats.shell import Command, Segment, lines_of, read_script
from cudalint.kinds import (
    SCRIPT_KINDS,
    SCRIPT_RULE_KINDS,
    SHELL_RULE_KINDS,
    FileKind,
    SourceFile,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    # A shell the file runs: its commands, and the variables set before it starts.
    Script = tuple[tuple[Command, ...], Mapping[str, str]]

__all__ = ["SCRIPT_KINDS", "SCRIPT_RULE_KINDS", "SHELL_RULE_KINDS", "commands", "scripts_of"]


def commands(source: SourceFile) -> tuple[Command, ...]:
    """Every command the file runs, in order."""
    return _commands(source.kind, source.text) if _runs_commands(source) else ()


def _runs_commands(source: SourceFile) -> bool:
    return source.text is not None and (source.kind in SCRIPT_KINDS
                                        or source.kind is FileKind.CI)


@lru_cache(maxsize=16)
def _commands(kind: FileKind, text: str) -> tuple[Command, ...]:
    """Asked by each rule that reads commands: made once per file."""
    return tuple(command for found, _ in _scripts(kind, text) for command in found)


def scripts_of(source: SourceFile) -> tuple[Script, ...]:
    """Each shell the file runs, for the rules that follow what a variable holds
    (formats.shell.with_variables): a script or a Makefile is one, a Dockerfile's `RUN`,
    `CMD` and `ENTRYPOINT` one each, started with the `ARG` defaults and `ENV` values of
    their stage (formats.dockerfile.variables_at), a CI `run:` step (a GitLab script line) one
    each, started with the variables of its step (formats.ci)."""
    return _scripts(source.kind, source.text) if _runs_commands(source) else ()


@lru_cache(maxsize=16)
def _scripts(kind: FileKind, text: str) -> tuple[Script, ...]:
    if kind is FileKind.CI:
        return _ci_scripts_of(text)
    if kind is FileKind.DOCKERFILE:
        return tuple((found, variables) for instruction, variables
                     in dockerfile.with_variables(text)
                     if (found := dockerfile.script_of(instruction)))
    if kind is FileKind.MAKEFILE:
        parsed = makefile.parse(text)
        return (((*read_script(parsed.recipes, parsed.guarded_rows),
                  *read_script(lines_of(parsed.shell_calls), parsed.guarded_rows)), {}),)
    segments = (Segment(row, 1, line) for row, line in enumerate(text.splitlines(), start=1))
    return ((tuple(read_script(lines_of(segments))), {}),)


def _ci_scripts_of(text: str) -> tuple[Script, ...]:
    """Each `run:` step (and GitLab script line) read as a script of its own, at the rows of
    the file, started with the variables its step sees (formats.ci: GitHub `env:` values,
    GitLab `variables:`)."""
    from cudalint.formats import ci, yaml_lines  # PyYAML: only for CI files

    lines = text.splitlines()
    return tuple((tuple(read_script(lines_of(yaml_lines.script_segments(node, lines)))),
                  step.values())
                 for step in ci.steps_of(text) for node in step.scripts)

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
    from collections.abc import Iterator, Mapping

    from yaml.nodes import Node

    # A shell the file runs: its commands, and the variables set before it starts.
    Script = tuple[tuple[Command, ...], Mapping[str, str]]

__all__ = ["SCRIPT_KINDS", "SCRIPT_RULE_KINDS", "SHELL_RULE_KINDS", "commands", "scripts_of"]

# Top-level keys of a .gitlab-ci.yml that are no job.
_GITLAB_RESERVED = frozenset({"stages", "variables", "default", "include", "workflow",
                              "image", "services", "before_script", "after_script", "cache"})
_GITLAB_SCRIPTS = ("script", "before_script", "after_script")


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
    their stage (formats.dockerfile.variables_at), a CI `run:` step one each."""
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
    the file; an unreadable file has none (CUD404 reports it)."""
    from cudalint.formats import yaml_lines  # PyYAML: only for CI files

    parsed = yaml_lines.documents(text)
    if not isinstance(parsed, tuple):
        return ()
    lines = text.splitlines()
    return tuple((tuple(read_script(lines_of(yaml_lines.script_segments(node, lines)))), {})
                 for node in _ci_scripts(parsed))


def _ci_scripts(documents: tuple[Node, ...]) -> Iterator[Node]:
    from cudalint.formats import yaml_lines

    get, items, entries = yaml_lines.get, yaml_lines.items, yaml_lines.entries
    for document in documents:
        jobs, runs = get(document, "jobs"), get(document, "runs")
        if jobs is None and runs is None:  # GitLab: every other top-level key is a job
            for key, job in items(document):
                if yaml_lines.scalar(key) in _GITLAB_RESERVED or str(key.value).startswith("."):
                    continue
                for script_key in _GITLAB_SCRIPTS:
                    yield from entries(get(job, script_key))
            continue
        steps = [step for _, job in items(jobs) for step in entries(get(job, "steps"))]
        steps += entries(get(runs, "steps"))  # a composite action
        for step in steps:
            run = get(step, "run")
            if run is not None:
                yield run

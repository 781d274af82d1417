"""The shell commands a file runs, whatever its kind: a shell script's lines, a Makefile's
recipes and `$(shell ...)` calls, a Dockerfile's `RUN`/`CMD`/`ENTRYPOINT`. The notebook
checker hands its `!` lines and `%%bash` cells over as a shell script.

Read once per file and shared by every rule that looks at commands (CUD401-CUD403, CUD5).
"""

from __future__ import annotations

from functools import lru_cache

from cudalint.formats import dockerfile, makefile
from cudalint.formats.shell import Command, Segment, lines_of, read_script
from cudalint.kinds import SCRIPT_KINDS, SCRIPT_RULE_KINDS, FileKind, SourceFile

__all__ = ["SCRIPT_KINDS", "SCRIPT_RULE_KINDS", "commands"]


def commands(source: SourceFile) -> tuple[Command, ...]:
    if source.text is None or source.kind not in SCRIPT_KINDS:
        return ()
    return _commands(source.kind, source.text)


@lru_cache(maxsize=16)
def _commands(kind: FileKind, text: str) -> tuple[Command, ...]:
    if kind is FileKind.DOCKERFILE:
        return tuple(dockerfile.scripts(dockerfile.parse(text)))
    if kind is FileKind.MAKEFILE:
        parsed = makefile.parse(text)
        return (*read_script(parsed.recipes, parsed.guarded_rows),
                *read_script(lines_of(parsed.shell_calls), parsed.guarded_rows))
    segments = (Segment(row, 1, line) for row, line in enumerate(text.splitlines(), start=1))
    return tuple(read_script(lines_of(segments)))

"""`cudalint check - --stdin-filename path/to/file.py`: an editor's buffer from standard input.

As ruff: the name gives the file kind, the configuration and the per-file-ignores; with
`--fix` the fixed text goes to stdout (the input itself when nothing changes or the name is
excluded) and the findings to stderr; without a name the buffer is Python. Nothing is written
to disk: fixes import the project's standalone helper only where it already exists, as in the
editor, else the configured helper module.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from cudalint import rules as registry
from cudalint.config import Config
from cudalint.engine.checkers.job import FileReport
from cudalint.engine.project import facts as project
from cudalint.engine.running.discovery import is_excluded
from cudalint.engine.running.project_facts import ProjectFacts
from cudalint.engine.running.runner import RunOptions, check_file, rules_for, selected_rules
from cudalint.kinds import FileKind, classify, is_conda_environment

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from types import SimpleNamespace

STDIN = Path("-")
# Said once, on standard error, by a check of standard input without a file name: its project
# (own packages, extensions, torch floor) is unknown, and the findings that depend on it are
# the conservative ones.
NAMELESS_NOTE = ("cudalint: note: standard input has no file name, so its project is unknown "
                 "(its own packages, extensions and torch floor are not read); pass "
                 "--stdin-filename PATH for the findings a check of PATH gives\n")


def wanted(args: SimpleNamespace) -> bool:
    return args.stdin_filename is not None or [str(p) for p in args.paths] == ["-"]


def check(name: Path | None, config: Config, options: RunOptions) -> FileReport:
    data = sys.stdin.buffer.read()
    path = name or STDIN
    kind = file_kind(name, data)
    if kind is None or (options.force_exclude and name is not None
                        and is_excluded(name, kind, config)):
        return _unchecked(path, data, options)
    # only the rules it can concern (not when fixing: see runner._SMALL_RUN)
    texts = [data] if kind is FileKind.PYTHON and not (options.fix or options.diff) else None
    enabled = rules_for(path, selected_rules(registry, config, options, [kind], texts), config)
    if name is None:
        settings = project.unknown_project_settings(config)
        sys.stderr.write(NAMELESS_NOTE)
    else:  # as in the editor: the project's own helper only where it exists
        facts = ProjectFacts(config, cache=options.cache,
                             writing=not (options.fix or options.diff))
        settings = facts.for_file(path, kind, existing_only=True)
    report = check_file(path, kind, enabled, settings, options, data=data)
    if options.fix and report.fixed_data is None:  # nothing to fix, or it could not be
        report.fixed_data = data
    return report


def file_kind(name: Path | None, data: bytes) -> FileKind | None:
    """The kind the name says; a name no pattern knows is Python when it ends in `.py`/`.pyw`
    or has no suffix (a script: a shell script by its shebang); None for other names."""
    if name is None:
        return FileKind.PYTHON
    kind = classify(Path(os.path.abspath(name)))  # (its folders matter to a workflow)
    if kind is None and name.suffix in (".yml", ".yaml"):
        return FileKind.CONDA if is_conda_environment(data[:16 * 1024]) else None
    if kind is not None or name.suffix not in ("", ".pyw"):
        return kind
    first = data.split(b"\n", 1)[0]
    if first.startswith(b"#!") and b"python" not in first and b"sh" in first:
        return FileKind.SHELL
    return FileKind.PYTHON


def _unchecked(path: Path, data: bytes, options: RunOptions) -> FileReport:
    report = FileReport(path, [], found=[])
    if options.fix:
        report.fixed_data = data
    return report


def write_result(report: FileReport, options: RunOptions) -> None:
    """With --fix, the fixed text (or the input unchanged) on stdout; with --diff, the diff."""
    if options.diff:
        sys.stdout.write(report.diff)
        sys.stdout.flush()
    elif options.fix and report.fixed_data is not None:
        sys.stdout.flush()
        sys.stdout.buffer.write(report.fixed_data)
        sys.stdout.buffer.flush()

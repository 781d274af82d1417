"""`cudalint check`: lint (and fix) paths, print the findings, choose the exit code."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from cudalint import rules
from cudalint.config import ConfigError, load_config
from cudalint.discovery import MissingPathError
from cudalint.engine.runner import FileReport, RunOptions, run, validate_selectors
from cudalint.output import github, json_format, sarif
from cudalint.output.progress import DelayedProgress, wants_progress

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
_MACHINE = {"json": json_format.render, "github": github.render, "sarif": sarif.render}


def run_check(args: argparse.Namespace) -> int:
    paths: list[Path] = args.paths or [Path(".")]
    for selector in [*(args.select or []), *(args.ignore or []), *args.extend_select]:
        if not rules.is_known_selector(selector):
            return _fail(f"unknown rule selector {selector!r} (see `cudalint rule --all`)")
    options = RunOptions(
        fix=(args.fix or args.unsafe_fixes) and not args.diff,
        unsafe_fixes=args.unsafe_fixes,
        diff=args.diff,
        want_edits=args.output_format in ("json", "sarif"),
        force_exclude=args.force_exclude,
        jobs=args.jobs,
        select=args.select,
        ignore=args.ignore,
        extend_select=args.extend_select,
        cache=not args.no_cache,
    )
    progress = (DelayedProgress(sys.stderr)
                if wants_progress(args.output_format, args.quiet, sys.stdout, sys.stderr) else None)
    try:
        config = load_config(_common_folder(paths), args.config)
        validate_selectors(config)
        reports = run(paths, config, options, progress)
    except (ConfigError, MissingPathError) as error:
        return _fail(str(error))
    finally:
        if progress is not None:
            progress.close()
    _print(reports, args, options)
    if args.diff:  # as ruff: 1 when there is something to fix
        return EXIT_FINDINGS if any(r.diff for r in reports) else EXIT_OK
    remaining = sum(len(r.findings) for r in reports)
    return EXIT_FINDINGS if remaining and not args.exit_zero else EXIT_OK


def _print(reports: list[FileReport], args: argparse.Namespace, options: RunOptions) -> None:
    if args.output_format in _MACHINE:
        sys.stdout.write(_MACHINE[args.output_format](reports))
        return
    from rich.console import Console  # only for the human formats: 0.1 s of start-up

    from cudalint.output import text

    console = Console(file=sys.stdout, highlight=False, soft_wrap=True)
    if args.statistics:
        text.render_statistics(reports, console)
        return
    if args.diff:
        text.render_diffs(reports, console)
    else:
        text.render_findings(reports, console, full=args.output_format == "full")
    if not args.quiet:
        text.render_footer(reports, console, fixing=options.fix, diff=options.diff,
                           unsafe=options.unsafe_fixes)
        text.render_helpers(reports, console, diff=options.diff)


def _common_folder(paths: list[Path]) -> Path:
    """Where to look for the configuration: the folder holding every path given."""
    resolved = [p.resolve() for p in paths]
    common = Path(os.path.commonpath(resolved)) if resolved else Path.cwd()
    return common if common.is_dir() else common.parent


def _fail(message: str) -> int:
    print(f"cudalint: error: {message}", file=sys.stderr)
    return EXIT_ERROR

"""`cudalint check`: lint (and fix) paths, print the findings, choose the exit code."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from cudalint import rules as registry
from cudalint.config import Config, ConfigError, load_config, project_root
from cudalint.engine.checkers.job import FileReport
from cudalint.engine.running.discovery import PathError
from cudalint.engine.running.runner import Interrupted, RunOptions, run
from cudalint.finding import UNDONE, Finding, Severity
from cudalint.output.printer import Printer
from cudalint.output.progress import HUMAN_FORMATS, DelayedProgress, wants_progress

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from types import SimpleNamespace
    from typing import TextIO

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
_WITH_EDITS = ("json", "sarif")
_FORMAT_MODULES = {"json": "json_format"}  # the output module of a format, where not its name


def run_check(args: SimpleNamespace) -> int:
    problem = _usage_problem(args)
    if problem is not None:
        return _fail(problem)
    from cudalint.commands import stdin

    reading_stdin = stdin.wanted(args)
    options = _options(args, in_memory=reading_stdin)
    try:
        config = load_config(_config_start(args, reading_stdin), args.config)
        if args.fail_on is not None:  # the command line's beats the configuration's
            config = config.replace(fail_on=args.fail_on)
        if args.show_settings or args.show_files:
            from cudalint.commands import show

            if args.show_settings:
                return show.settings(_shown_path(args, reading_stdin), config, options,
                                     args.paths)
            return show.files(args.paths or [Path(".")], config, options)
        if reading_stdin:
            reports = [stdin.check(args.stdin_filename, config, options)]
        else:
            reports = _run_with_progress(args, config, options)
    except (ConfigError, PathError) as error:
        return _fail(str(error))
    except Interrupted as stop:
        return _interrupted(stop.reports)
    # With --fix or --diff on standard input, the code goes to stdout and the rest to stderr.
    out = sys.stderr if reading_stdin and (options.fix or options.diff) else sys.stdout
    code = _exit_code(reports, args, config)
    try:
        if reading_stdin:
            stdin.write_result(reports[0], options)
        _print(reports, args, options, config, out)
        out.flush()
    except BrokenPipeError:  # `| head`: the reader has all it wants
        _quiet_closed_pipe(out)
    return code


def _quiet_closed_pipe(out: TextIO) -> None:
    """A closed pipe ends the output quietly, and the exit code stays what the run found (0
    or 1, or 2 where a file could not be checked or written), as `git log | head` and ruff
    do: what was written is written. Python would report the pipe again when it flushes at
    exit; the stream now goes nowhere."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # (a stream without a descriptor: nothing flushes it)
        pass


def _run_with_progress(args: SimpleNamespace, config: Config,
                       options: RunOptions) -> list[FileReport]:
    progress = (DelayedProgress(sys.stderr)
                if wants_progress(args.output_format, args.quiet, sys.stdout, sys.stderr) else None)
    try:
        return run(args.paths or [Path(".")], config, options, progress, registry=registry)
    finally:
        if progress is not None:
            progress.close()


def _usage_problem(args: SimpleNamespace) -> str | None:
    unknown = _unknown_selector([*(args.select or []), *(args.ignore or []),
                                 *args.extend_select])
    if unknown is not None:
        return f"unknown rule selector {unknown!r} (see `cudalint rule --all`)"
    others = [p for p in args.paths if str(p) != "-"]
    if others and (args.stdin_filename is not None or len(others) < len(args.paths)):
        return "standard input (`-` or --stdin-filename) cannot be checked with other paths"
    if args.fix_only and args.diff:
        return "--fix-only and --diff cannot be used together"
    return None


def _unknown_selector(selectors: list[str]) -> str | None:
    if not selectors:
        return None
    from cudalint.codes import is_known_selector  # the rule index: only when codes are named

    return next((s for s in selectors if not is_known_selector(s)), None)


def _options(args: SimpleNamespace, *, in_memory: bool) -> RunOptions:
    fixing = args.fix or args.unsafe_fixes or args.fix_only
    return RunOptions(
        fix=fixing and not args.diff,
        unsafe_fixes=args.unsafe_fixes,
        diff=args.diff,
        want_edits=args.output_format in _WITH_EDITS,
        force_exclude=args.force_exclude,
        jobs=args.jobs,
        select=args.select,
        ignore=args.ignore,
        extend_select=args.extend_select,
        in_memory=in_memory,
        cache=not args.no_cache,
    )


def _config_start(args: SimpleNamespace, reading_stdin: bool) -> Path:
    if reading_stdin:
        return args.stdin_filename or Path.cwd()
    return _common_folder(args.paths or [Path(".")])


def _shown_path(args: SimpleNamespace, reading_stdin: bool) -> Path:
    if reading_stdin:
        return args.stdin_filename or Path("-")
    return (args.paths or [Path(".")])[0]


def _print(reports: list[FileReport], args: SimpleNamespace, options: RunOptions,
           config: Config, out: TextIO) -> None:
    if args.output_format not in HUMAN_FORMATS:
        out.write(_machine_format(args.output_format, reports, config))
        return
    from cudalint.output import text

    printer = Printer(out)
    if args.statistics:
        text.render_statistics(reports, printer)
        return
    if args.diff or args.fix_only:  # the error lines, which these show no finding of
        errors = Printer(sys.stderr)
        for report in reports:
            for finding in report.findings:
                if finding.is_error_line:
                    errors.print(*text.headline(finding))
    if args.diff:
        if not options.in_memory:  # standard input's diff went to stdout already
            text.render_diffs(reports, printer)
    elif not args.fix_only:
        text.render_findings(reports, printer, full=args.output_format == "full")
    if args.quiet:  # as ruff: the findings (or the diff) and nothing else
        return
    if args.show_fixes:  # its first line is --fix-only's: "Fixed 3 errors:"
        text.render_fixes(reports, printer)
    if args.fix_only and not args.show_fixes:
        text.render_fixed(reports, printer)
    elif not args.fix_only:
        text.render_footer(reports, printer, fixing=options.fix, diff=options.diff,
                           unsafe=options.unsafe_fixes)
    text.render_helpers(reports, printer, diff=options.diff)


def _machine_format(name: str, reports: list[FileReport], config: Config) -> str:
    """A machine-readable format's text; only that format's module is imported."""
    if name == "gitlab":
        from cudalint.output import gitlab

        return gitlab.render(reports, project_root(config))
    import importlib  # (and warnings with it) only for these formats

    module = importlib.import_module(f"cudalint.output.{_FORMAT_MODULES.get(name, name)}")
    rendered: str = module.render(reports)
    return rendered


def _exit_code(reports: list[FileReport], args: SimpleNamespace, config: Config) -> int:
    if any(map(_not_done, (f for report in reports for f in report.findings))):
        return EXIT_ERROR  # in every mode, --exit-zero included, as ruff does
    if (args.diff or args.fix_only) and any(
            f.is_error_line for report in reports for f in report.findings):
        return EXIT_ERROR  # a file these could not fix (a syntax error): 0 or 1 would hide it
    if args.diff:  # as ruff: 1 when there is something to fix
        return EXIT_FINDINGS if any(r.diff for r in reports) else EXIT_OK
    if args.fix_only or args.exit_zero:  # as ruff: --fix-only exits 0 after fixing
        return EXIT_OK
    # Findings left (after --fix: those it could not fix) at least as severe as `fail-on`;
    # every finding is printed all the same. A file that could not be checked always fails.
    threshold = Severity[config.fail_on.upper()]
    failing = any(f.fails(threshold) for report in reports for f in report.findings)
    return EXIT_FINDINGS if failing else EXIT_OK


def _not_done(finding: Finding) -> bool:
    """The error line of a file that cudalint could not check or write (not the file's own
    problem: a syntax error, an undecodable or unreadable file, which exit 1)."""
    return finding.is_error_line and UNDONE in finding.extra


def _common_folder(paths: list[Path]) -> Path:
    """Where to look for the configuration: the folder holding every path given (as given:
    a link's target may lie outside the project)."""
    resolved = [Path(os.path.abspath(p)) for p in paths]
    common = Path(os.path.commonpath(resolved)) if resolved else Path.cwd()
    return common if common.is_dir() else common.parent


def _interrupted(reports: list[FileReport]) -> int:
    """Ctrl-C: which files were written before it; each file is whole, fixed or as it was."""
    written = [str(report.path) for report in reports if report.written]
    lines = [f"cudalint: interrupted; {len(written)} file{'s' * (len(written) != 1)} written"
             + (":" if written else ""), *(f"  {path}" for path in written)]
    print("\n".join(lines), file=sys.stderr)
    return EXIT_INTERRUPTED


def _fail(message: str) -> int:
    print(f"cudalint: error: {message}", file=sys.stderr)
    return EXIT_ERROR

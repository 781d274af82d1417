"""The `cudalint` command. `main(argv) -> int` is testable in-process.

Exit codes (as ruff): 0 no failing findings left, 1 findings left at least as severe as
`fail-on` (default: warning), 2 usage, configuration or internal error. `cudalint PATH` is
short for `cudalint check PATH`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from cudalint import __version__

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace
    from typing import Any, NoReturn

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
FAIL_ON = ("error", "warning", "info")  # config.FAIL_ON (not imported: `--version` reads none)
OUTPUT_FORMATS = ("full", "concise", "json", "github", "gitlab", "junit", "sarif")

# Subcommands that parse their own arguments: name -> "module:function".
_DELEGATED = {
    "smoke": "cudalint.commands.smoke:main",
    "mps-ops": "cudalint.commands.mps_ops:main",
    "lsp": "cudalint.lsp.server:main",
    "report": "cudalint.commands.report:main",
}
# Subcommands whose parser lives beside them: name -> module with parser(cls) and run(args).
_OWN = {"rule": "cudalint.commands.rule", "init-helper": "cudalint.commands.init_helper"}


class UsageError(Exception):
    """Bad command-line input: printed on one line, exit 2."""


def _parser_class() -> type[argparse.ArgumentParser]:
    """argparse's parser, whose errors are a UsageError (argparse: only where it is used)."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise UsageError(message)

    return Parser


def _codes(text: str) -> list[str]:
    codes = [code.strip().upper() for code in text.split(",") if code.strip()]
    if not codes:  # `--select ""` would silently check nothing
        import argparse

        raise argparse.ArgumentTypeError("no rule codes given")
    return codes


def _jobs(text: str) -> int:
    try:
        jobs: int | None = int(text)
    except ValueError:
        jobs = None
    if jobs is None or jobs < 1:  # `-j 0`, `-j -1` would silently pick a number of processes
        import argparse

        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}" if jobs is None
                                         else f"must be 1 or more, not {jobs}")
    return jobs


class _Option:
    """One option of `cudalint check`: a switch (store_true), or an option with a value,
    converted by `type` (a string when None) and one of `choices` when given."""

    __slots__ = ("choices", "default", "dest", "flags", "help", "metavar", "switch", "type")

    def __init__(self, *flags: str, help: str, metavar: str | None = None,
                 type: Callable[[str], Any] | None = None, choices: Sequence[str] = (),
                 default: Any = None, switch: bool = False) -> None:
        self.flags = flags
        self.dest = flags[-1].lstrip("-").replace("-", "_")  # as argparse names it
        self.help = help
        self.metavar = metavar
        self.type = type
        self.choices = choices
        self.default = False if switch else default
        self.switch = switch


_PATHS_HELP = "files or folders (`-`: standard input) (default: .)"
# `cudalint check`'s options: the argparse parser is made from them, and so is the fast path
# that parses a common command line without argparse (`_parse_plainly`).
_CHECK_OPTIONS = (
    _Option("--fix", switch=True, help="apply safe fixes"),
    _Option("--unsafe-fixes", switch=True, help="also apply unsafe fixes"),
    _Option("--fix-only", switch=True,
            help="apply fixes and print no findings; exit 0 unless an error"),
    _Option("--diff", switch=True, help="show fixes as a diff; write nothing"),
    _Option("--show-fixes", switch=True, help="list the fixes applied, per file and code"),
    _Option("--select", type=_codes, metavar="CODES",
            help="codes or prefixes to enable (CUD1,CUD201) instead of the configuration's "
                 "choice, its `ignore` included (default: the configuration's `select`, else "
                 "ALL)"),
    _Option("--ignore", type=_codes, metavar="CODES",
            help="codes or prefixes to disable, besides the configuration's `ignore`"),
    _Option("--extend-select", type=_codes, default=[], metavar="CODES",
            help="add to the selection, even codes the configuration ignores (as ruff)"),
    _Option("--output-format", choices=OUTPUT_FORMATS, default="full",
            help="how to print findings"),
    _Option("--statistics", switch=True, help="count findings per code"),
    _Option("--exit-zero", switch=True, help="exit 0 despite findings"),
    _Option("--fail-on", choices=FAIL_ON,
            help="exit 1 only for findings at least this severe (error > warning > info); "
                 "every finding is printed, and a file that cannot be checked always fails "
                 "(default: the configuration's `fail-on`, else warning: info findings are "
                 "harmless off CUDA)"),
    _Option("--config", type=Path, metavar="FILE",
            help="a pyproject.toml or cudalint.toml to use (default: the nearest "
                 "pyproject.toml with [tool.cudalint])"),
    _Option("--force-exclude", switch=True,
            help="apply excludes to files named on the command line (pre-commit)"),
    _Option("--stdin-filename", type=Path, metavar="PATH",
            help="the name of the file read from standard input: its kind, configuration and "
                 "per-file-ignores come from it"),
    _Option("--show-files", switch=True,
            help="list the files that would be checked, and exit"),
    _Option("--show-settings", switch=True,
            help="print the settings used for the first path, and exit"),
    _Option("-j", "--jobs", type=_jobs, metavar="N",
            help="processes to check files with (default: one per core; one under pre-commit, "
                 "which runs a hook per core)"),
    _Option("-q", "--quiet", switch=True, help="print findings only"),
    _Option("--no-cache", switch=True,
            help="neither read nor write .cudalint_cache (also: CUDALINT_NO_CACHE=1)"),
)
_BY_FLAG = {flag: option for option in _CHECK_OPTIONS for flag in option.flags}


def _check_parser() -> argparse.ArgumentParser:
    from cudalint.commands.help import HelpFormatter

    parser = _parser_class()(prog="cudalint check", description="Find what ties code to CUDA.",
                             formatter_class=HelpFormatter)
    parser.add_argument("paths", nargs="*", type=Path, default=[], help=_PATHS_HELP)
    for option in _CHECK_OPTIONS:
        if option.switch:
            parser.add_argument(*option.flags, action="store_true", help=option.help)
            continue
        given: dict[str, Any] = {"type": option.type} if option.type is not None else {}
        parser.add_argument(*option.flags, default=option.default, metavar=option.metavar,
                            choices=option.choices or None, help=option.help, **given)
    return parser


def parse_check(args: Sequence[str]) -> SimpleNamespace:
    """`cudalint check`'s arguments, as argparse parses them (UsageError for bad ones)."""
    plain = _parse_plainly(args)
    if plain is not None:
        return plain
    from types import SimpleNamespace

    return SimpleNamespace(**vars(_check_parser().parse_args(args)))


def _parse_plainly(args: Sequence[str]) -> SimpleNamespace | None:
    """What argparse makes of a plain command line, without importing argparse (a few
    milliseconds of a cached run's start): options spelt in full (`--name value`,
    `--name=value`, `-j N`), values that do not start with `-`, and the paths in one run.
    None for anything else (an abbreviation, `--`, `-h`, a bad value...): argparse decides,
    and says what is wrong. tests/test_cli.py compares the two on generated command lines."""
    from types import SimpleNamespace

    values = {option.dest: option.default for option in _CHECK_OPTIONS}
    values["extend_select"] = []  # argparse's default list, never shared between parses
    paths: list[str] = []
    index, paths_ended = 0, False
    while index < len(args):
        token = args[index]
        index += 1
        if token == "-" or not token.startswith("-"):
            if paths_ended:  # argparse takes one run of paths
                return None
            paths.append(token)
            continue
        paths_ended = bool(paths)
        name, equals, value = token.partition("=")
        option = _BY_FLAG.get(name)
        if option is None or (option.switch and equals):
            return None
        if option.switch:
            values[option.dest] = True
            continue
        if not equals:
            if index == len(args) or args[index].startswith("-"):
                return None
            value, index = args[index], index + 1
        if option.choices and value not in option.choices:
            return None
        try:
            values[option.dest] = value if option.type is None else option.type(value)
        except Exception:  # argparse says what is wrong with it
            return None
    return SimpleNamespace(paths=[Path(path) for path in paths], **values)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(args)
    except UsageError as error:
        print(f"cudalint: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except SystemExit as done:  # `--help`: argparse prints it and exits
        return done.code if isinstance(done.code, int) else EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        print(f"cudalint: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_ERROR


def _dispatch(args: list[str]) -> int:
    if args[:1] in (["--version"], ["-V"]):
        print(f"cudalint {__version__}")
        return EXIT_OK
    if args[:1] in (["-h"], ["--help"]):
        print(_usage())
        return EXIT_OK
    command = args[0] if args and (args[0] in _DELEGATED or args[0] in _OWN) else "check"
    rest = args[1:] if args and args[0] == command else args
    if command in _DELEGATED:
        return _delegate(_DELEGATED[command], rest)
    if command in _OWN:
        module = _import(_OWN[command])
        status: int = module.run(module.parser(_parser_class()).parse_args(rest))
        return status
    from cudalint.commands.check import run_check

    return run_check(parse_check(rest))


def _import(name: str) -> Any:
    """A subcommand's module. (importlib, and warnings with it: only for the subcommands.)"""
    import importlib

    return importlib.import_module(name)


def _delegate(target: str, rest: list[str]) -> int:
    module_name, function = target.split(":")
    try:
        module = _import(module_name)
    except ImportError as error:
        raise UsageError(f"{module_name.split('.')[1]} is unavailable: {error}") from error
    entry: Callable[[list[str]], int] = getattr(module, function)
    return entry(rest)


def _usage() -> str:
    return (
        "usage: cudalint [check] [PATH ...] [--fix] [--unsafe-fixes] [--diff] [--select CODES]\n"
        "                [--ignore CODES] [--output-format FORMAT] [--statistics]\n"
        "                [--exit-zero] [--config FILE] [...]      (cudalint check --help)\n"
        "       cudalint check - --stdin-filename PATH [--fix]  (an editor's buffer)\n"
        "       cudalint rule CODE | --all [--output-format json]\n"
        "       cudalint init-helper PATH [--force]\n"
        "       cudalint report [PATH ...] [--smoke RUN.json ...] [--output-format FORMAT]\n"
        "                                        (can the project move to a Mac?)\n"
        "       cudalint smoke TARGET [...]      (needs cudalint[smoke])\n"
        "       cudalint smoke --init [FILE] [--force]  (writes a smoke target to confirm)\n"
        "       cudalint mps-ops [--target-torch X]\n"
        "       cudalint lsp                     (needs cudalint[lsp])\n"
        "\n"
        "exit codes: 0 no findings at or above --fail-on (default: warning), 1 such findings,\n"
        "            2 usage, configuration or internal error"
    )

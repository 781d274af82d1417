"""The `cudalint` command. `main(argv) -> int` is testable in-process.

Exit codes (as ruff): 0 no findings left, 1 findings left, 2 usage, configuration or internal
error. `cudalint PATH` is short for `cudalint check PATH`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from cudalint import __version__
from cudalint.commands import HelpFormatter

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from typing import NoReturn

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
OUTPUT_FORMATS = ("full", "concise", "json", "github", "gitlab", "junit", "sarif")

# Subcommands that parse their own arguments: name -> "module:function".
_DELEGATED = {
    "smoke": "cudalint.runtime.smoke.command:main",
    "mps-ops": "cudalint.mps_ops.command:main",
    "lsp": "cudalint.lsp.server:main",
    "report": "cudalint.report.command:main",
}
# Subcommands whose parser lives beside them: name -> module with parser(cls) and run(args).
_OWN = {"rule": "cudalint.commands.rule", "init-helper": "cudalint.commands.init_helper"}


class UsageError(Exception):
    """Bad command-line input: printed on one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _check_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="cudalint check", description="Find what ties code to CUDA.",
                     formatter_class=HelpFormatter)
    parser.add_argument("paths", nargs="*", type=Path, default=[],
                        help="files or folders (`-`: standard input) (default: .)")
    parser.add_argument("--fix", action="store_true", help="apply safe fixes")
    parser.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes")
    parser.add_argument("--fix-only", action="store_true",
                        help="apply fixes and print no findings; exit 0 unless an error")
    parser.add_argument("--diff", action="store_true", help="show fixes as a diff; write nothing")
    parser.add_argument("--show-fixes", action="store_true",
                        help="list the fixes applied, per file and code")
    parser.add_argument("--select", type=_codes, metavar="CODES",
                        help="codes or prefixes to enable (CUD1,CUD201) instead of the "
                             "configuration's choice, its `ignore` included (default: the "
                             "configuration's `select`, else ALL)")
    parser.add_argument("--ignore", type=_codes, metavar="CODES",
                        help="codes or prefixes to disable, besides the configuration's "
                             "`ignore`")
    parser.add_argument("--extend-select", type=_codes, default=[], metavar="CODES",
                        help="add to the selection, even codes the configuration ignores "
                             "(as ruff)")
    parser.add_argument("--output-format", choices=OUTPUT_FORMATS, default="full",
                        help="how to print findings")
    parser.add_argument("--statistics", action="store_true", help="count findings per code")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 despite findings")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="a pyproject.toml or cudalint.toml to use (default: the nearest "
                             "pyproject.toml with [tool.cudalint])")
    parser.add_argument("--force-exclude", action="store_true",
                        help="apply excludes to files named on the command line (pre-commit)")
    parser.add_argument("--stdin-filename", type=Path, metavar="PATH",
                        help="the name of the file read from standard input: its kind, "
                             "configuration and per-file-ignores come from it")
    parser.add_argument("--show-files", action="store_true",
                        help="list the files that would be checked, and exit")
    parser.add_argument("--show-settings", action="store_true",
                        help="print the settings used for the first path, and exit")
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help="processes to check files with (default: one per core; one under "
                             "pre-commit, which runs a hook per core)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print findings only")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write .cudalint_cache (also: CUDALINT_NO_CACHE=1)")
    return parser


def _codes(text: str) -> list[str]:
    codes = [code.strip().upper() for code in text.split(",") if code.strip()]
    if not codes:  # `--select ""` would silently check nothing
        raise argparse.ArgumentTypeError("no rule codes given")
    return codes


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
        module = importlib.import_module(_OWN[command])
        status: int = module.run(module.parser(_Parser).parse_args(rest))
        return status
    from cudalint.commands.check import run_check

    return run_check(_check_parser().parse_args(rest))


def _delegate(target: str, rest: list[str]) -> int:
    module_name, function = target.split(":")
    try:
        module = importlib.import_module(module_name)
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
        "       cudalint mps-ops [--target-torch X]\n"
        "       cudalint lsp                     (needs cudalint[lsp])\n"
        "\n"
        "exit codes: 0 no findings, 1 findings, 2 usage, configuration or internal error"
    )

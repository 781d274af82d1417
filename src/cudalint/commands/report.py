"""`cudalint report [PATH ...] [--smoke RUN.json ...] [--output-format text|json|markdown|html]
[-o FILE]`: exit 0 with a decision, 2 with a one-line error."""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console

from cudalint.commands.help import HelpFormatter
from cudalint.config import ConfigError, load_config
from cudalint.engine.running.discovery import MissingPathError
from cudalint.report.audit import audit
from cudalint.report.decision import Decision, decide
from cudalint.report.evidence import load_run
from cudalint.report.html import to_html
from cudalint.report.project import describe
from cudalint.report.render import print_terminal, to_json, to_markdown
from cudalint.usage import OneLineParser
from cudalint.writing import WriteError, write_file

FORMATS: dict[str, Callable[[Decision], str]] = {
    "json": to_json, "markdown": to_markdown, "html": to_html,
}


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="cudalint report", exit_on_error=False,
                           description="Decide whether a project can move to a Mac.",
                           formatter_class=HelpFormatter)
    parser.add_argument("paths", nargs="*", type=Path,
                        help="files or folders to audit (default: .)")
    parser.add_argument("--smoke", type=Path, action="append", default=[], metavar="RUN.json",
                        help="a `cudalint smoke --json` report (repeatable)")
    parser.add_argument("--output-format", choices=("text", *FORMATS), default="text",
                        help="how to write the decision")
    parser.add_argument("-o", "--output", type=Path,
                        help="write the report here instead of printing it")
    parser.add_argument("--json", type=Path, help="also write the decision as JSON here")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="a pyproject.toml or cudalint.toml to use (default: the nearest "
                             "pyproject.toml with [tool.cudalint])")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        paths = args.paths or [Path(".")]
        common = Path(os.path.commonpath([p.resolve() for p in paths]))
        root = common if common.is_dir() else common.parent
        # A file that is not a smoke report stops the report (NotASmokeReport: exit 2).
        runs = [load_run(path, root) for path in args.smoke]
        config = load_config(root, args.config)
        decision = decide(audit(paths, config), runs, project=describe(root))
        _write(decision, args)
    except (argparse.ArgumentError, ConfigError, MissingPathError, ValueError) as error:
        print(f"cudalint report: error: {error}", file=sys.stderr)
        return 2
    except WriteError as error:
        print(f"cudalint report: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"cudalint report: error: cannot write {error.filename}: {error.strerror}",
              file=sys.stderr)
        return 2
    return 0


def _write(decision: Decision, args: argparse.Namespace) -> None:
    if args.json:
        _save(args.json, to_json(decision))
    if args.output_format == "text":
        if args.output is None:
            print_terminal(decision)
            return
        stream = io.StringIO()
        print_terminal(decision, Console(file=stream, highlight=False, soft_wrap=True))
        _save(args.output, stream.getvalue())
        return
    text = FORMATS[args.output_format](decision)
    if args.output is None:
        sys.stdout.write(text)
    else:
        _save(args.output, text)


def _save(path: Path, text: str) -> None:
    """`path` made to hold `text`, never through a link (cudalint.writing)."""
    try:
        write_file(path, text.encode("utf-8"), overwrite=True)
    except WriteError as error:
        raise WriteError(f"{path}: {error}") from None

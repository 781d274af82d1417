"""`cudalint report [PATH ...] [--smoke RUN.json ...] [--json FILE]`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from cudalint.config import ConfigError, load_config
from cudalint.discovery import MissingPathError
from cudalint.engine.runner import RunOptions, run
from cudalint.report.decision import Decision, Verdict, decide

_HEADLINE = {
    Verdict.READY: ("MPS ready", "green"),
    Verdict.DUAL_TRACK: ("dual-track: develop on the Mac, keep CUDA for heavy work", "yellow"),
    Verdict.REFUSED: ("MPS refused: the main path needs CUDA", "red"),
}
_SHOWN = 15


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cudalint report", exit_on_error=False,
                                     description="Decide whether a project can move to MPS.")
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--smoke", type=Path, action="append", default=[],
                        help="a `cudalint smoke --json` report (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the decision as JSON here")
    parser.add_argument("--config", type=Path)
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        runs = [_load_smoke(path) for path in args.smoke]
        paths = args.paths or [Path(".")]
        common = Path(os.path.commonpath([p.resolve() for p in paths]))
        config = load_config(common if common.is_dir() else common.parent, args.config)
        reports = run(paths, config, RunOptions())
    except (argparse.ArgumentError, ConfigError, MissingPathError, ValueError) as error:
        print(f"cudalint report: error: {error}", file=sys.stderr)
        return 2
    decision = decide((f for r in reports for f in r.findings), runs)
    _print(decision)
    if args.json:
        args.json.write_text(json.dumps(decision.to_dict(), indent=2) + "\n", encoding="utf-8")
    return 0


def _load_smoke(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a smoke report: {error}") from error
    if not isinstance(data, dict) or "verdict" not in data:
        raise ValueError(f"{path}: not a smoke report (no 'verdict')")
    return data


def _print(decision: Decision) -> None:
    console = Console(highlight=False, soft_wrap=True)
    text, style = _HEADLINE[decision.verdict]
    console.print(f"Decision: {text}", style=f"bold {style}")
    counts = ", ".join(f"{n} {name}" for name, n in decision.counts.items())
    console.print(f"Findings: {counts}")
    for reason in decision.reasons[:_SHOWN]:
        console.print(f"  - {reason}", markup=False)
    if len(decision.reasons) > _SHOWN:
        console.print(f"  ... and {len(decision.reasons) - _SHOWN} more")

"""`cudalint rule CODE`: a rule's documentation; `--all` lists every rule (`--output-format
json` for tools)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from cudalint.commands.help import HelpFormatter
from cudalint.docs import render_rule_page, severity_text
from cudalint.engine.contract import Rule
from cudalint.rules import primary_rules, rule_by_code


def parser(parser_class: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = parser_class(prog="cudalint rule", description="Show a rule's documentation.",
                          formatter_class=HelpFormatter)
    parser.add_argument("code", nargs="?", help="a rule code, e.g. CUD101")
    parser.add_argument("--all", action="store_true", help="list every rule")
    parser.add_argument("--output-format", choices=("text", "json"), default="text",
                        help="how to print")
    return parser


def run(args: argparse.Namespace) -> int:
    if args.all == (args.code is not None):
        print("cudalint: error: rule: give a code (CUD101) or --all", file=sys.stderr)
        return 2
    if args.all:
        _print_all(primary_rules(), args.output_format)
        return 0
    found = rule_by_code(args.code)
    if found is None:
        print(f"cudalint: error: unknown rule code {args.code!r}", file=sys.stderr)
        return 2
    if args.output_format == "json":
        sys.stdout.write(json.dumps(rule_to_dict(found), indent=2) + "\n")
    else:
        sys.stdout.write(render_rule_page(found))
    return 0


def rule_to_dict(rule: type[Rule]) -> dict[str, Any]:
    fix = rule.fix_applicability()
    return {
        "code": rule.code,
        "name": rule.name,
        "message": rule.message,
        "severity": str(rule.severity),
        "severities": [str(s) for s in rule.severities()],
        "fix": fix.value if fix else None,
        "url": rule.url(),
        "explanation": rule.doc(),
    }


def _print_all(found: Sequence[type[Rule]], output_format: str) -> None:
    if output_format == "json":
        sys.stdout.write(json.dumps([rule_to_dict(r) for r in found], indent=2) + "\n")
        return
    for rule in found:
        fix = rule.fix_applicability()
        mark = f"fix: {fix.value}" if fix else "no fix"
        print(f"{rule.code}\t{rule.name}\t{severity_text(rule)}\t{mark}\t{rule.message}")

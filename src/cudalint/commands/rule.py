"""`cudalint rule CODE`: a rule's documentation; `--all` lists every rule."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cudalint.docs import render_rule_page
from cudalint.rules import primary_rules, rule_by_code


def main(argv: Sequence[str]) -> int:
    if not argv:
        print("cudalint: error: rule: give a code (CUD101) or --all", file=sys.stderr)
        return 2
    if argv[0] == "--all":
        for rule in primary_rules():
            fix = rule.fix_applicability()
            mark = f"fix: {fix.value}" if fix else "no fix"
            print(f"{rule.code}\t{rule.name}\t{rule.severity}\t{mark}\t{rule.message}")
        return 0
    found = rule_by_code(argv[0])
    if found is None:
        print(f"cudalint: error: unknown rule code {argv[0]!r}", file=sys.stderr)
        return 2
    sys.stdout.write(render_rule_page(found))
    return 0

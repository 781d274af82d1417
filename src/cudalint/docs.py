"""Rule documentation pages, generated from the rule classes (as ruff's docs are).

`python -m cudalint.docs docs/rules` rewrites the pages; a test fails when one is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cudalint.engine.contract import Rule
from cudalint.rules import index_build, primary_rules

SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead",
            "## Fix safety")


def severity_text(rule: type[Rule]) -> str:
    """`error`, or `error (warning or info at some sites)` for a rule whose findings differ."""
    usual, *others = rule.severities()
    if not others:
        return str(usual)
    return f"{usual} ({' or '.join(str(s) for s in others)} at some sites)"


def render_rule_page(rule: type[Rule]) -> str:
    fix = rule.fix_applicability()
    lines = [
        f"# {rule.code} ({rule.name})",
        "",
        f"Severity: {severity_text(rule)}. "
        + (f"Fix: {fix.value}." if fix else "Fix: none.")
        + " Guarded sites (under a CUDA check such as `torch.cuda.is_available()`, `x.is_cuda`,"
        " `device.type == \"cuda\"` or `torch.distributed.is_nccl_available()`, or a variable"
        " holding one; after an early exit without CUDA (`return`, `raise`, `continue`,"
        " `sys.exit`), also when its test is an `or` of a check and something else; in a test"
        " marked for CUDA (a pytest CUDA marker or `skipif`), where no safe fix rewrites it; or"
        " in `try: ... except ImportError` whose handler falls back, not one that only raises)"
        " are reported one severity lower; a user's switch (`args.use_cuda`, a parameter named"
        " `use_cuda`, `cuda` or `gpu`) is no guard.",
        "",
        rule.doc(),
        "",
    ]
    return "\n".join(lines)


def render_index() -> str:
    rows = ["# Rules", "", "| code | name | severity | fix | message |", "|---|---|---|---|---|"]
    for rule in primary_rules():
        fix = rule.fix_applicability()
        rows.append(f"| [{rule.code}]({rule.code}.md) | {rule.name} | {severity_text(rule)} | "
                    f"{fix.value if fix else '—'} | {rule.message.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def expected_pages() -> dict[str, str]:
    pages = {f"{rule.code}.md": render_rule_page(rule) for rule in primary_rules()}
    pages["index.md"] = render_index()
    return pages


def write_pages(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("CUD*.md"):
        stale.unlink()
    for name, content in expected_pages().items():
        (folder / name).write_text(content, encoding="utf-8")


if __name__ == "__main__":
    write_pages(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/rules"))
    index_build.write()  # data/rule_index.json: which module holds which rule

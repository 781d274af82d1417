"""The rule pages under docs/rules are generated from the rule classes; a stale page fails."""

from __future__ import annotations

from pathlib import Path

from cudalint.docs import expected_pages

DOCS = Path(__file__).resolve().parents[1] / "docs" / "rules"


def test_rule_pages_are_current():
    expected = expected_pages()
    present = {p.name: p.read_text(encoding="utf-8") for p in DOCS.glob("*.md")}
    stale = sorted(name for name, text in expected.items() if present.get(name) != text)
    extra = sorted(set(present) - set(expected))
    assert not stale and not extra, (
        f"regenerate with `python -m cudalint.docs docs/rules` (stale: {stale}, extra: {extra})"
    )


def test_every_page_has_the_ruff_sections():
    for name, text in expected_pages().items():
        if name == "index.md":
            continue
        for section in ("## What it does", "## Why is this bad?", "## Example"):
            assert section in text, f"{name} lacks {section}"

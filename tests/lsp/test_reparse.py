"""The spliced `ast` tree of an edited document is the tree a parse of the whole text gives,
positions included, edit after edit; an edit that breaks the file fails as the whole parse
fails."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from benchmarks.training_file import training_file
from cudalint.engine.reading.ast_parse import parse_quietly
from cudalint.engine.reading.depth import too_deep
from cudalint.lsp.reparse import Reparser

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))

# What a person types or pastes, the awkward cases among it: brackets and strings left open,
# a body's indentation, a decorator or `else:` on its own, a backslash, a `;`, a coding cookie.
SNIPPETS = (
    "x = torch.zeros(2).cuda()\n", "# a comment\n", "\n", "    y = 1\n", "(", ")", '"""',
    "'", "@decorator\n", "else:\n", "    pass\n", "\\\n", "a = 1; b = 2\n", "def f():\n",
    "        return x.cuda()\n", "class Extra:\n    z = 1\n", "if True:\n",
    "# -*- coding: latin-1 -*-\n", "from __future__ import annotations\n", "é = 1\n", "\t",
    "deep = " + "-" * 130 + "1\n",  # deeper than cudalint checks
)


def whole(text: bytes) -> str:
    try:
        return ast.dump(parse_quietly(text), include_attributes=True)
    except (SyntaxError, ValueError) as error:
        return f"error: {type(error).__name__}"


def spliced(reparser: Reparser, text: bytes) -> str:
    try:
        return ast.dump(reparser.parse(text), include_attributes=True)
    except (SyntaxError, ValueError) as error:
        return f"error: {type(error).__name__}"


def edited(text: str, chance: random.Random) -> str:
    lines = text.splitlines(keepends=True) or [""]
    row = chance.randrange(len(lines))
    what = chance.random()
    if what < 0.2 and len(lines) > 1:
        del lines[row]
    elif what < 0.3:
        lines[row] = ""  # and the line below joins nothing: the line is gone
    elif what < 0.65:
        lines.insert(row, chance.choice(SNIPPETS))
    else:
        line = lines[row]
        column = chance.randrange(len(line) + 1)
        lines[row] = line[:column] + chance.choice(SNIPPETS).rstrip("\n") + line[column:]
    return "".join(lines)


def replay(text: str, seed: int, steps: int) -> tuple[Reparser, int]:
    """The reparser after the edits, and how many versions that parse followed one that did."""
    chance = random.Random(seed)
    reparser = Reparser()
    good, followers, parsed = text, 0, False
    for step in range(steps):
        data = text.encode()
        expected = whole(data)
        assert spliced(reparser, data) == expected, f"step {step}"
        if not expected.startswith("error"):
            assert reparser.shallow is not too_deep(parse_quietly(data), data), f"step {step}"
        followed, parsed = parsed, not expected.startswith("error")
        followers += followed and parsed
        if parsed:
            good = text
        elif chance.random() < 0.7:  # a person puts right most of what breaks the file
            text = good
        text = edited(text, chance)
    return reparser, followers


@pytest.mark.parametrize("seed", range(4))
def test_the_training_script_edit_after_edit(seed: int) -> None:
    reparser, followers = replay(training_file(300), seed, steps=80)
    assert reparser.spliced > followers / 2  # most came from the previous version


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_a_fixture_edit_after_edit(path: Path) -> None:
    replay(path.read_text(encoding="utf-8"), seed=len(path.name), steps=12)


def test_typing_in_a_function_reparses_that_function_only() -> None:
    text = training_file(300)
    reparser = Reparser()
    first = reparser.parse(text.encode())
    lines = text.splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if line.startswith("    def forward"))
    lines.insert(row + 1, "        x = x.cuda()\n")
    second = reparser.parse("".join(lines).encode())
    assert reparser.spliced == 1
    assert second.body[0] is first.body[0]  # the statements above were kept, not re-parsed
    assert ast.dump(second, include_attributes=True) == whole("".join(lines).encode())


def test_a_statement_nested_too_deep_is_told_until_it_goes() -> None:
    text = training_file(300)
    lines = text.splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if line.startswith("    def forward"))
    reparser = Reparser()
    reparser.parse(text.encode())
    assert reparser.shallow
    deep = [*lines[:row + 1], "        x = " + "-" * 130 + "x\n", *lines[row + 1:]]
    reparser.parse("".join(deep).encode())
    assert not reparser.shallow and reparser.spliced == 1
    reparser.parse(text.encode())
    assert reparser.shallow and reparser.spliced == 2

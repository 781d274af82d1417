"""`# noqa` in Python files: only real comments count, and the file is tokenized only when a
row the caller asks about says noqa."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalint.engine.contract import PythonRule
from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.lint.python import lint_python
from cudalint.engine.locate import noqa
from cudalint.engine.walk.context import Settings
from cudalint.rules import all_rules

SOURCE = '''\
import torch  # noqa: F401

HELP = "run with  # noqa  to silence it"


def train(model, batch):
    model.cuda()  # noqa: CUD102
    batch.cuda()
    return "# noqa"; x.cuda()
'''


def test_rows_that_say_nothing_of_noqa_need_no_tokenizing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object) -> None:
        raise AssertionError("tokenized")

    monkeypatch.setattr(noqa.tokenize, "generate_tokens", refuse)
    assert noqa.parse_python_noqa(SOURCE, [8]) == {}
    assert noqa.parse_python_noqa(SOURCE.replace("\n", "\r\n"), [8]) == {}
    assert noqa.parse_python_noqa(SOURCE.replace("\n", "\r"), [2, 8]) == {}


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_row_that_says_noqa_reads_only_real_comments(newline: str) -> None:
    source = SOURCE.replace("\n", newline)
    everything = noqa.parse_python_noqa(source)
    assert everything == {1: frozenset({"F401"}), 7: frozenset({"CUD102"})}
    assert noqa.parse_python_noqa(source, [7, 8]) == everything
    assert noqa.parse_python_noqa(source, [3, 9]) == everything  # strings, read as such


def test_findings_are_suppressed_as_before() -> None:
    rules = tuple(r for r in all_rules() if issubclass(r, PythonRule))
    settings = Settings()
    result = lint_python(SOURCE.encode(), Path("train.py"), rules, settings,
                         prefilter=Prefilter.for_rules(rules, settings))
    assert [(f.code, f.location.row) for f in result.findings] == [("CUD102", 8),
                                                                   ("CUD102", 9)]


RULES = tuple(r for r in all_rules() if issubclass(r, PythonRule))


def _found(source: str) -> list[tuple[str | None, int, int]]:
    settings = Settings()
    result = lint_python(source.encode(), Path("train.py"), RULES, settings,
                         prefilter=Prefilter.for_rules(RULES, settings))
    return [(f.code, f.location.row, f.end_location.row) for f in result.findings]


# `torch.cuda.synchronize(...)` over three lines: CUD105 and CUD109 both span rows 3 to 5.
SPANNING = "import torch\n\ntorch.cuda.synchronize({first}\n    None,{middle}\n){last}\n"
BOTH = [("CUD105", 3, 5), ("CUD109", 3, 5)]


def _spanning(first: str = "", middle: str = "", last: str = "") -> str:
    return SPANNING.format(first=first, middle=middle, last=last)


def test_a_finding_over_several_lines_spans_them() -> None:
    assert _found(_spanning()) == BOTH


@pytest.mark.parametrize("place", ["first", "last"])
def test_noqa_on_the_first_or_the_last_line_of_a_finding_suppresses_it(place: str) -> None:
    """As documented (noqa.is_suppressed): a matching comment on the finding's first or last
    row (the end of the call's last line, where a formatter leaves a trailing comment)."""
    assert _found(_spanning(**{place: "  # noqa"})) == []
    assert _found(_spanning(**{place: "  # NOQA:CUD105,CUD109"})) == []


def test_noqa_on_a_line_inside_a_finding_suppresses_nothing() -> None:
    assert _found(_spanning(middle="  # noqa")) == BOTH


@pytest.mark.parametrize("place", ["first", "last"])
def test_noqa_naming_a_code_suppresses_only_that_code(place: str) -> None:
    """Ruff's semantics: `# noqa: CODE` silences CODE alone, a list silences each code it
    names, and a code of another tool silences nothing."""
    assert _found(_spanning(**{place: "  # noqa: CUD109"})) == [("CUD105", 3, 5)]
    assert _found(_spanning(**{place: "  # noqa: CUD105"})) == [("CUD109", 3, 5)]
    assert _found(_spanning(**{place: "  # noqa: CUD105 CUD109"})) == []
    assert _found(_spanning(**{place: "  # noqa: F401"})) == BOTH


def test_noqa_naming_a_code_on_one_line_findings() -> None:
    source = ("import torch\n\ntorch.cuda.synchronize()  # noqa: CUD105\n\n\n"
              "def train(model, batch):\n"
              "    model.cuda()  # noqa: CUD105\n    batch.cuda()  # noqa: CUD102\n")
    assert _found(source) == [("CUD109", 3, 3), ("CUD102", 7, 7)]

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

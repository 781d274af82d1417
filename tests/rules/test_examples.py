"""Every rule's VALID and INVALID examples, run through the engine: a rule is its own spec."""

from __future__ import annotations

import pytest

from cudalint.engine.contract import Invalid, Rule, Valid, iter_examples
from cudalint.finding import Finding
from cudalint.rules import all_rules, rule_by_code
from tests.lint import run_on


def _rule_id(rule: type[Rule]) -> str:
    """The code, and the class name for a code's secondary classes (CUD501 in Python)."""
    return rule.code if rule.primary else f"{rule.code}-{rule.__name__}"


CASES = [
    pytest.param(rule, example, id=f"{_rule_id(rule)}-{type(example).__name__.lower()}-{index}")
    for rule in all_rules()
    for index, example in enumerate(iter_examples(rule))
]


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_example(tmp_path, rule, example):
    report, _ = run_on(tmp_path, example.code, name=example.path, codes=[rule.code],
                       tree=True)
    own = [f for f in report.findings if f.code == rule.code]
    errors = [f for f in report.findings if f.code is None]
    assert not errors, errors
    if isinstance(example, Valid):
        assert own == []
        return
    assert len(own) == example.count, [(f.location, f.message) for f in own]
    if example.guarded is not None:
        assert [f.guarded for f in own] == [example.guarded] * example.count
    _assert_documented_severities(rule, own)
    if example.fixed is None:
        assert all(f.fix is None for f in own)
        return
    _, after = run_on(tmp_path, example.code, name=example.path, codes=[rule.code],
                      fix=True, unsafe=example.unsafe, tree=True)
    assert after.decode() == example.fixed
    # Fixing is idempotent: a second pass changes nothing.
    _, again = run_on(tmp_path, after, name=example.path, codes=[rule.code], fix=True,
                      unsafe=example.unsafe, tree=True)
    assert again == after


def _assert_documented_severities(rule: type[Rule], found: list[Finding]) -> None:
    """Each finding has a severity its code's documentation gives (one lower when guarded)."""
    primary = rule_by_code(rule.code)
    assert primary is not None
    for finding in found:
        allowed = {s.lowered() if finding.guarded else s for s in primary.severities()}
        assert finding.severity in allowed, (finding.message, finding.severity)


@pytest.mark.parametrize("rule", all_rules(), ids=_rule_id)
def test_rule_is_documented(rule):
    doc = rule.doc()
    for section in ("## What it does", "## Why is this bad?", "## Example"):
        assert section in doc, f"{rule.code} lacks {section!r}"
    assert rule.INVALID, f"{rule.code} has no INVALID example"
    assert rule.VALID, f"{rule.code} has no VALID example"
    if rule.fix_applicability() is not None:
        assert "## Fix safety" in doc


def test_unsafe_examples_need_unsafe_fixes(tmp_path):
    """An example marked unsafe is not fixed by plain --fix."""
    for rule in all_rules():
        for example in rule.INVALID:
            if isinstance(example, Invalid) and example.unsafe and example.fixed is not None:
                _, after = run_on(tmp_path, example.code, name=example.path,
                                  codes=[rule.code], fix=True, tree=True)
                assert after.decode() == example.code, rule.code

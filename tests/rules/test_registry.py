"""A code may be read by several classes (CUD501 in scripts and in Python): all of them run,
one documents it."""

from __future__ import annotations

from pathlib import Path

from cudalint.config import Selection
from cudalint.engine.checkers.job import run_file_rules
from cudalint.engine.contract import FileRule, PythonRule
from cudalint.engine.lint.python import error_finding
from cudalint.kinds import FileKind, SourceFile
from cudalint.rules import all_rules, primary_rules, rule_by_code, select


def test_every_class_runs_and_one_documents_each_code():
    codes = [rule.code for rule in primary_rules()]
    assert len(codes) == len(set(codes))
    assert set(codes) == {rule.code for rule in all_rules()}
    cud501 = [rule for rule in select([Selection(["CUD501"])]) if rule.code == "CUD501"]
    assert {issubclass(rule, FileRule) for rule in cud501} == {True, False}
    assert any(issubclass(rule, PythonRule) for rule in cud501)
    primary = rule_by_code("CUD501")
    assert primary is not None and primary.primary and primary is cud501[0]
    for rule in all_rules():
        same = [r for r in all_rules() if r.code == rule.code]
        assert {r.name for r in same} == {rule.name}, rule.code


class _Broken(FileRule):
    code = "CUD999"
    file_kinds = frozenset({FileKind.SHELL})

    def check(self, source):
        raise ValueError("unexpected input")


def test_a_failing_rule_is_an_error_line_and_duplicates_collapse():
    source = SourceFile(Path("run.sh"), FileKind.SHELL, b"x", "x")

    class _Twice(FileRule):
        code = "CUD998"

        def check(self, source):
            return [error_finding(source.path, "invalid YAML")] * 2

    found = run_file_rules([_Broken(), _Twice()], source)
    assert [f.message for f in found] == [
        "CUD999 could not read the file (internal error: ValueError)", "invalid YAML"]


def test_the_rule_index_is_current():
    from cudalint.rules import index_build

    assert index_build.path().read_text(encoding="utf-8") == index_build.generated(), (
        "regenerate with `python -m cudalint.docs docs/rules` (data/rule_index.json is stale)")


def test_the_rules_of_some_kinds_are_those_of_the_whole_registry():
    from cudalint.codes import codes
    from cudalint.rules import for_kinds

    assert codes() == {rule.code for rule in all_rules()}
    for kinds in ([FileKind.PYTHON], [FileKind.REQUIREMENTS, FileKind.DOCKERFILE],
                  list(FileKind)):
        python = {FileKind.PYTHON, FileKind.NOTEBOOK} & set(kinds)
        reading = [r for r in all_rules() if (issubclass(r, PythonRule) and python)
                   or (issubclass(r, FileRule) and set(r.file_kinds) & set(kinds))]
        chosen = for_kinds(kinds)
        assert [r for r in chosen if r in reading] == reading  # each one, in the same order
    assert set(for_kinds(list(FileKind))) == set(all_rules())


def test_a_small_run_imports_every_rule_that_reports_on_its_files():
    """A run of a few Python files imports only the rules whose terms they name (the rule
    index keeps the terms): each rule's own invalid examples name them."""
    from cudalint.rules import for_kinds

    for rule in all_rules():
        if not issubclass(rule, PythonRule):
            continue
        for example in rule.INVALID:
            if example.path.endswith(".py"):
                chosen = for_kinds([FileKind.PYTHON], [example.code.encode()])
                assert rule in chosen, (rule.code, example.code)
    assert for_kinds([FileKind.PYTHON], [b"import os\n"]) == tuple(
        r for r in for_kinds([FileKind.PYTHON]) if r.settings_terms)

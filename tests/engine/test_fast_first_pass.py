"""The first pass's fast paths answer as their plain definitions do, on this project's own
source files and on generated programs: the identifiers of a text, a function's code without
its prose, the statements a walk of the blocks finds, the depth gate at every limit near a
file's depth, and the pre-filter's answers with the identifiers given or found."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudalint.engine.contract import PythonRule
from cudalint.engine.first_pass.outline import _nodes
from cudalint.engine.first_pass.prefilter import (
    _STRING_OR_COMMENT,
    Prefilter,
    _blank,
    _start,
    identifiers,
    statements_in,
    without_prose,
)
from cudalint.engine.first_pass.sparse import first_line
from cudalint.engine.reading.ast_parse import parse_quietly
from cudalint.engine.reading.depth import HOLDING_NOTHING, deeper_than
from cudalint.engine.walk.context import Settings
from cudalint.rules import all_rules
from tests.engine.nesting import libcst_depth

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(p for folder in ("src", "tests", "scripts", "benchmarks", "fixtures")
               for p in (ROOT / folder).rglob("*.py"))
_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
GENERATED = settings(max_examples=40, derandomize=True, deadline=None, database=None,
                     suppress_health_check=list(HealthCheck))
# hypothesmith compiles what it generates, and CPython warns of some of it (`"a"()`).
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")


@cache
def _trees() -> list[tuple[bytes, ast.Module]]:
    found = []
    for path in FILES:
        data = path.read_bytes()
        try:
            found.append((data, parse_quietly(data)))
        except (SyntaxError, ValueError):  # a fixture that is broken on purpose
            continue
    return found


def _parsed(source: str) -> tuple[bytes, ast.Module] | None:
    data = source.encode()
    try:
        return data, parse_quietly(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def test_the_files_are_there() -> None:
    assert len(FILES) > 100 and len(_trees()) > 100


# --- identifiers


@pytest.mark.parametrize("data", [
    b"", b"x", b"1e5 0x1f 12ab3c 3_000 _9 __init__", b"caf\xc3\xa9x = 1\n", b"a.b(c)[d]",
    b"\x00\xffname\x80", b"123", b"0_a a0 _ 9",
])
def test_identifiers_as_findall_on_odd_texts(data: bytes) -> None:
    assert identifiers(data) == set(_IDENTIFIER.findall(data))


@given(st.binary(max_size=200))
def test_identifiers_as_findall_on_any_bytes(data: bytes) -> None:
    assert identifiers(data) == set(_IDENTIFIER.findall(data))


def test_identifiers_as_findall_on_real_files() -> None:
    for path in FILES:
        data = path.read_bytes()
        assert identifiers(data) == set(_IDENTIFIER.findall(data)), path


# --- a function's code without its prose


def _plain_without_prose(text: bytes, node: ast.stmt, first: int) -> bytes:
    """The definition: blank every bare string statement below `node`, then drop comments."""
    strings = [inner.value for inner in ast.walk(node)
               if isinstance(inner, ast.Expr) and inner is not node
               and isinstance(inner.value, ast.Constant) and isinstance(inner.value.value, str)]
    lines = text.splitlines(keepends=True)
    for string in sorted(strings, key=_start, reverse=True):
        _blank(lines, string, first)
    return _STRING_OR_COMMENT.sub(rb"\g<string>", b"".join(lines))


def _units(data: bytes, tree: ast.Module) -> Iterator[tuple[bytes, ast.stmt, int]]:
    lines = data.splitlines(keepends=True)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first, last = first_line(node), node.end_lineno or node.lineno
            yield b"".join(lines[first - 1 : last]), node, first


def test_code_without_prose_as_defined_on_real_files() -> None:
    count = 0
    for data, tree in _trees():
        for text, node, first in _units(data, tree):
            assert without_prose(text, node, first) == _plain_without_prose(text, node, first)
            count += 1
    assert count > 1000


@GENERATED
@given(hypothesmith.from_grammar())
def test_code_without_prose_as_defined_on_generated_programs(source: str) -> None:
    parsed = _parsed(source)
    if parsed is None:
        return
    for text, node, first in _units(*parsed):
        assert without_prose(text, node, first) == _plain_without_prose(text, node, first)


# --- walks


def _walked(node: ast.AST) -> list[int]:
    return sorted(id(n) for n in ast.walk(node) if not isinstance(n, HOLDING_NOTHING))


def _statements_walked(node: ast.AST) -> list[int]:
    return sorted(id(n) for n in ast.walk(node)
                  if n is node or isinstance(n, (ast.stmt, ast.excepthandler, ast.match_case)))


def test_walks_find_what_ast_walk_finds_in_real_files() -> None:
    for _, tree in _trees():
        for node in tree.body:
            assert sorted(map(id, statements_in(node))) == _statements_walked(node)
            assert sorted(map(id, _nodes(node))) == _walked(node)


@GENERATED
@given(hypothesmith.from_grammar())
def test_walks_find_what_ast_walk_finds_in_generated_programs(source: str) -> None:
    parsed = _parsed(source)
    if parsed is None:
        return
    tree = parsed[1]
    assert sorted(map(id, statements_in(tree))) == _statements_walked(tree)
    assert sorted(map(id, _nodes(tree))) == _walked(tree)


def test_a_walk_yields_each_node_before_those_it_holds() -> None:
    """`_stored` leaves out a comprehension's variables, which it must meet after the
    comprehension."""
    for _, tree in _trees():
        seen: set[int] = set()
        for node in _nodes(tree):
            seen.add(id(node))
            for child in ast.iter_child_nodes(node):
                assert id(child) not in seen


# --- the depth gate


def _gate_as_the_walk(data: bytes, tree: ast.Module, below: int = 12) -> None:
    deepest = libcst_depth(tree, data)
    for limit in range(max(1, deepest - below), deepest + 2):
        assert deeper_than(tree, limit, data) is (deepest > limit), (limit, deepest)


def test_the_gate_answers_as_the_full_walk_at_every_limit_near_a_real_files_depth() -> None:
    for data, tree in _trees():
        _gate_as_the_walk(data, tree)
        for node in tree.body:  # and each top-level statement alone, as the editor asks
            _gate_as_the_walk(data, ast.Module(body=[node], type_ignores=[]), below=1)


@GENERATED
@given(hypothesmith.from_grammar())
def test_the_gate_answers_as_the_full_walk_on_generated_programs(source: str) -> None:
    parsed = _parsed(source)
    if parsed is not None:
        _gate_as_the_walk(*parsed)


# --- the pre-filter's answers, with the identifiers given or found


def _prefilter() -> Prefilter:
    return Prefilter.for_rules([r for r in all_rules() if issubclass(r, PythonRule)],
                               Settings())


def test_answers_with_the_identifiers_given_as_without() -> None:
    everything = _prefilter()
    answers: set[bool] = set()
    for data, tree in _trees():
        prefilter = everything.within(data)
        if prefilter is None:
            continue
        lines = data.splitlines(keepends=True)
        for node in tree.body:
            text = b"".join(lines[first_line(node) - 1 : node.end_lineno or node.lineno])
            words = identifiers(text)
            assert prefilter.matches(text, words) is prefilter.matches(text)
            assert prefilter.binds(text, words) is prefilter.binds(text)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = first_line(node)
                answer = prefilter.matches_code(text, node, first)
                assert prefilter.matches_code(text, node, first, words) is answer
                answers.add(answer)
    assert answers == {True, False}

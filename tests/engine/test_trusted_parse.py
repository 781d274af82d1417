"""The engine's LibCST parse skips LibCST's per-node checks for the nodes its parser builds,
and only for them."""

from __future__ import annotations

import threading
from pathlib import Path

import libcst as cst
import pytest

from cudalint.engine.reading import trusted_parse

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py"))[:12], ids=lambda p: p.name)
def test_the_tree_is_the_one_lib_cst_builds(path: Path) -> None:
    data = path.read_bytes()
    trusted = trusted_parse.parse_module(data)
    assert trusted.bytes == data
    assert trusted.deep_equals(cst.parse_module(data))


def test_the_parse_checks_no_node(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[str] = []
    original = cst.SimpleWhitespace._validate

    def counting(self: cst.SimpleWhitespace) -> None:
        checked.append(self.value)
        original(self)

    monkeypatch.setattr(cst.SimpleWhitespace, "_validate", counting)
    source = "def f(a, b):\n    return a + b\n"
    trusted_parse.parse_module(source)
    assert checked == []
    cst.parse_module(source)
    assert checked  # LibCST's own parse checks them


def test_nodes_built_outside_the_parse_are_still_checked() -> None:
    trusted_parse.parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.SimpleWhitespace("not whitespace")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


def test_another_thread_is_checked_while_a_parse_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node built in another thread during the parse (the language server's) is checked."""
    errors: list[BaseException] = []
    original = cst.parse_module

    def parse_while_another_thread_builds(source: str | bytes) -> cst.Module:
        def build() -> None:
            try:
                cst.SimpleWhitespace("x")
            except cst.CSTValidationError as error:
                errors.append(error)

        worker = threading.Thread(target=build)
        worker.start()
        worker.join()
        return original(source)

    monkeypatch.setattr(cst, "parse_module", parse_while_another_thread_builds)
    trusted_parse.parse_module("y = 2\n")
    assert len(errors) == 1

"""The report refuses a smoke file naming a check smoke never writes (issue 39): the list it
reads (`report.CHECK_NAMES`) must be every name the harness gives a Check, and no other."""

from __future__ import annotations

import ast
from pathlib import Path

import cudalint
from cudalint.runtime.smoke.report import CHECK_NAMES

SMOKE = Path(cudalint.__file__).parent / "runtime" / "smoke"


def _written() -> set[str]:
    """Every check name the harness writes: `Check("name", ...)` and the modules' NAME."""
    names: set[str] = set()
    for path in SMOKE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "Check" and node.args
                    and isinstance(node.args[0], ast.Constant)):
                names.add(node.args[0].value)
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "NAME"
                    and isinstance(node.value, ast.Constant)):
                names.add(node.value.value)
    return names


def test_the_names_the_report_accepts_are_those_smoke_writes() -> None:
    assert set(CHECK_NAMES) == _written()
    assert len(CHECK_NAMES) == len(set(CHECK_NAMES))

"""Chains that CPython compiles and `ast` keeps flat, but LibCST nests one level per link (an
8,000-term `and`, adjacent strings, a comprehension's `for`s): LibCST's native parser overflowed
the C stack on them (a segfault, in `check`, `report` and an interrupted `--fix -j 2`). Each is
one error line for its file now, exit 2, and the other files are still checked and fixed. Run
in subprocesses: a regression kills the child, not the test run."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.engine.checkers.job import imported_helpers
from cudalint.engine.reading.depth import TOO_DEEP
from tests.engine.fixing_run import GOOD, assert_fixed

SOURCE = str(Path(__file__).parents[2] / "src")
_HEAD = "import torch\n\ndef f(a, b):\n    d = torch.device('cuda')\n    return "
DEEP = {  # in a function naming `cuda`: LibCST reads it
    "8000-term-and": _HEAD + " and ".join(["a"] * 8000) + "\n",
    "8000-term-or-of-calls": _HEAD + " or ".join(["b(d)"] * 8000) + "\n",
    "8000-adjacent-strings": _HEAD + " ".join(["'a'"] * 8000) + "\n",
    "3000-fors": _HEAD + "[a " + " ".join(["for a in b"] * 3000) + "]\n",
    "8000-term-and-at-module-level": "import torch\nd = torch.device('cuda')\nx = "
                                     + " and ".join(["d"] * 8000) + "\n",
}


def _cudalint(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cudalint", *args], cwd=root, text=True,
                          capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": SOURCE})


def _project(root: Path, deep: str) -> list[Path]:
    """A project: the deep file among fixable ones (before it and after it in name order)."""
    (root / ".git").mkdir()
    (root / "m_deep.py").write_text(deep)
    goods = [root / f"{prefix}_good{number}.py" for prefix in "az" for number in range(3)]
    for path in goods:
        path.write_text(GOOD)
    return goods


@pytest.mark.parametrize("deep", list(DEEP.values()), ids=list(DEEP))
def test_cpython_compiles_it(deep):
    compile(deep, "deep.py", "exec")


@pytest.mark.parametrize("deep", list(DEEP.values()), ids=list(DEEP))
def test_check_says_one_line_for_the_deep_file_and_checks_the_others(tmp_path, deep):
    _project(tmp_path, deep)
    done = _cudalint(tmp_path, "check", "--no-cache", "--output-format", "json", ".")
    assert done.returncode == 2, done.stderr  # not -11: no segfault
    assert done.stderr == ""
    findings = json.loads(done.stdout)
    deep_lines = [f["message"] for f in findings if f["filename"].endswith("m_deep.py")]
    assert deep_lines == [TOO_DEEP]
    checked = {Path(f["filename"]).name for f in findings if f["code"] == "CUD102"}
    assert checked == {f"{prefix}_good{number}.py" for prefix in "az" for number in range(3)}


def test_fix_with_two_workers_fixes_the_others_and_writes_their_helper(tmp_path):
    goods = _project(tmp_path, DEEP["8000-term-and"])
    done = _cudalint(tmp_path, "check", "--fix", "--no-cache", "-j", "2", ".")
    assert done.returncode == 2, done.stderr
    assert f"m_deep.py:1:1: {TOO_DEEP}" in done.stdout
    assert (tmp_path / "m_deep.py").read_text() == DEEP["8000-term-and"]
    helper = ast.parse((tmp_path / "_device.py").read_text())
    defined = {node.name for node in helper.body if isinstance(node, ast.FunctionDef)}
    for path in goods:
        assert_fixed(path)
        assert imported_helpers(path.read_text(), "_device") <= defined


def test_report_takes_the_deep_file_as_not_checked(tmp_path):
    _project(tmp_path, DEEP["8000-term-and"])
    done = _cudalint(tmp_path, "report", "--output-format", "json", ".")
    assert done.returncode == 0, done.stderr  # not -11
    assert done.stderr == ""
    assert TOO_DEEP in done.stdout
    decision = json.loads(done.stdout)
    assert decision  # a whole decision was written, the other files' findings in it
    assert "a_good0.py" in done.stdout

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
from cudalint.engine.reading.depth import TOO_DEEP, TooDeep, parse_module, too_deep
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
    # nested in `ast` too (the gate counted these before): as long as CPython compiles them
    "2000-term-sum": _HEAD + " + ".join(["a"] * 2000) + "\n",
    "2000-elifs": _HEAD + "d\n    if a:\n        pass\n"
                  + "    elif a:\n        pass\n" * 2000,
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
def test_cpython_compiles_it_and_the_gate_refuses_it_before_libcst(deep):
    """Valid Python (so the file's error is not a syntax error), which the depth gate refuses
    from `ast`'s tree, without LibCST reading it."""
    compile(deep, "deep.py", "exec")
    data = deep.encode()
    assert too_deep(ast.parse(data), data)
    with pytest.raises(TooDeep):
        parse_module(deep)


def test_the_gate_passes_the_same_chains_when_short():
    for short in (_HEAD + " and ".join(["a"] * 50) + "\n", _HEAD + " ".join(["'a'"] * 50) + "\n",
                  _HEAD + "[a " + " ".join(["for a in b"] * 20) + "]\n"):
        data = short.encode()
        assert not too_deep(ast.parse(data), data)
        assert parse_module(short).code == short


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


def test_a_deep_setup_py_is_read_for_the_project_facts_without_a_crash(tmp_path):
    """setup.py is parsed for its CUDA extensions before any file is checked."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n"
        "ok = " + " and ".join(["a"] * 8000) + "\n"
        "setup(name='x', ext_modules=[CUDAExtension('ext', ['a.cu'])])\n")
    (tmp_path / "good.py").write_text(GOOD)
    done = _cudalint(tmp_path, "check", "--no-cache", "--output-format", "json", ".")
    assert done.returncode == 2, done.stderr  # not -11: setup.py itself is not checked
    found = {(Path(f["filename"]).name, f["code"], f["message"])
             for f in json.loads(done.stdout)}
    assert ("setup.py", None, TOO_DEEP) in found
    assert {(name, code) for name, code, _ in found} == {("setup.py", None), ("good.py", "CUD102")}


def test_a_deep_notebook_cell_beside_a_fixed_one(tmp_path):
    """The deep cell names nothing the rules look for; the helper's placement reads every
    cell."""
    (tmp_path / ".git").mkdir()
    cells = ["import torch\n", "x = " + " and ".join(["a"] * 8000) + "\n",
             "model = Net().cuda()\n"]
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {},
                   "outputs": [], "source": cell} for cell in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    done = _cudalint(tmp_path, "check", "--fix", "--no-cache", ".")
    assert done.returncode == 0, done.stderr  # not -11
    fixed = [cell["source"] for cell in json.loads(notebook.read_text())["cells"]]
    assert fixed[:2] == cells[:2]  # the helper tops the cell that needs it
    assert "def pick_device(" in fixed[2]
    assert fixed[2].endswith("\nmodel = Net().to(pick_device())\n")


def test_a_helper_module_name_of_8000_parts_is_one_configuration_error(tmp_path):
    """The helper's import, `from a.a.(...) import pick_device`, is as deep as LibCST reads it."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cudalint]\nhelper = "' + ".".join(["a"] * 8000) + '"\n')
    (tmp_path / "good.py").write_text(GOOD)
    done = _cudalint(tmp_path, "check", "--fix", "--no-cache", ".")
    assert done.returncode == 2, done.stderr  # not -11
    [line] = done.stderr.splitlines()
    assert line.endswith("helper: a module name of 8000 parts; at most 50")
    assert (tmp_path / "good.py").read_text() == GOOD

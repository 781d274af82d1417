"""Hostile configurations, round three: a pyproject.toml is read as TOML allows (a BOM before
it; an integer too long for int() in another tool's table spoils nothing), and what cudalint
cannot take in its own table (such an integer, an empty rule selector, a broken
`[tool.cudalint` header) is one line naming the file, exit 2, never defaults silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalint.cli import main

HUGE = "9" * 5000
TRAIN = "import torch\nmodel = Net().cuda()\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", "--no-cache", "--output-format", "concise", *args, "."])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("ours", ["", '[tool.cudalint]\nignore = ["CUD4"]\n'])
def test_a_huge_integer_in_another_tools_table_is_no_concern(project, capsys, ours):
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "p"\ndependencies = ["torch"]\n\n[tool.other]\nseed = {HUGE}\n'
        f"sizes = [\n  1,\n  {HUGE},\n]\n{ours}")
    code, out, err = _check(capsys)
    assert (code, err) == (1, "")
    assert "train.py:2:" in out and "internal error" not in out


def test_a_huge_integer_in_cudalints_own_table_is_one_line(project, capsys):
    (project / "pyproject.toml").write_text(f"[tool.other]\nx = 1\n[tool.cudalint]\n"
                                            f"max-file-size = {HUGE}\n")
    code, out, err = _check(capsys)
    assert (code, out) == (2, "")
    assert err == (f"cudalint: error: {project / 'pyproject.toml'}: invalid TOML: line 4: "
                   "max-file-size: a number of more than 4300 digits\n")


def test_a_notebook_holding_a_huge_integer_is_skipped_with_a_line(project, capsys):
    notebook = {"cells": [{"cell_type": "code", "source": "x.cuda()\n", "metadata": {},
                           "outputs": [], "execution_count": 1}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(notebook).replace('"execution_count": 1', f'"execution_count": {HUGE}')
    (project / "nb.ipynb").write_text(text)
    code, out, err = _check(capsys)
    assert code == 1 and err == ""
    assert "nb.ipynb:1:1: skipped: the notebook holds a number of more than 4300 digits" in out
    assert "internal error" not in out and "train.py:2:" in out


@pytest.mark.parametrize(("table", "key"), [
    ('ignore = [""]', "ignore"),
    ('select = ["CUD1", " "]', "select"),
    ('extend-select = [""]', "extend-select"),
    ('per-file-ignores = {"*.py" = [""]}', "per-file-ignores '*.py'"),
])
def test_an_empty_selector_in_the_file_is_refused_as_on_the_command_line(project, capsys,
                                                                           table, key):
    (project / "pyproject.toml").write_text(f"[tool.cudalint]\n{table}\n")
    code, out, err = _check(capsys)
    assert (code, out) == (2, "")
    assert err == (f"cudalint: error: {project / 'pyproject.toml'}: [tool.cudalint] {key}: "
                   'an empty rule selector ("")\n')


@pytest.mark.parametrize("header", ["[tool.cudalint", "[tool.cudalint\t# settings",
                                    '[tool."cudalint"', "[ tool.cudalint.smoke"])
def test_a_broken_cudalint_header_is_an_error_naming_the_file(project, capsys, header):
    (project / "pyproject.toml").write_text(f'[project]\nname = "p"\n\n{header}\n'
                                            'ignore = ["CUD1"]\n')
    code, out, err = _check(capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"cudalint: error: {project / 'pyproject.toml'}: invalid TOML")
    assert err.count("\n") == 1


def test_a_bom_before_pyproject_is_read_over(project, capsys):
    (project / "pyproject.toml").write_bytes(
        b'\xef\xbb\xbf[tool.cudalint]\nignore = ["CUD1"]\n')
    assert _check(capsys) == (0, "All checks passed!\n", "")

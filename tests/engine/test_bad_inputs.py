"""Odd files of every kind the audit reads: each gives one error line for that file (or
nothing), never a traceback, and the rest of the repository is still checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.rules.cud3_native.elf import minimal_shared_library

GOOD = ("requirements.txt", "cupy-cuda12x\n")
HUGE = "x" * 500_000

CASES = {
    "yaml-syntax": ("environment.yml", "dependencies: [cudatoolkit\nchannels: x\n"),
    "yaml-tab": (".github/workflows/ci.yml", "jobs:\n\ttest:\n  runs-on: gpu\n"),
    "yaml-control-character": ("docker-compose.yml", "services:\x00\n"),
    "yaml-deep": ("environment.yml", "[" * 50_000),
    "yaml-not-a-mapping": ("environment.yml", "- just\n- a list\n"),
    "toml-syntax": ("pyproject.toml", "[project\nname = 'x'\n"),
    "toml-deep": ("pyproject.toml", "a = " + "[" * 50_000),
    "toml-wrong-types": ("pyproject.toml", "project = 3\n[tool]\nuv = 'x'\n"),
    "not-utf8-dockerfile": ("Dockerfile", b"FROM python\nRUN echo caf\xe9\n"),
    "binary-requirements": ("requirements-gpu.txt", bytes(range(256))),
    "binary-setup-cfg": ("setup.cfg", b"\x00\xff\xfe" * 100),
    "random-so": ("libops.so", bytes(range(256)) * 4),
    "truncated-elf": ("libops.so.1", minimal_shared_library("libcudart.so")[:200]),
    "notebook-not-json": ("nb.ipynb", "{'cells': ["),
    "notebook-not-utf8": ("nb.ipynb", b'{"cells": ["\xff"]}'),
    "notebook-list": ("nb.ipynb", "[1, 2]"),
    "notebook-deep": ("nb.ipynb", "[" * 100_000),
    "notebook-odd-cells": ("nb.ipynb", json.dumps({"cells": [
        3, {"cell_type": "code", "source": 5}, {"cell_type": "code", "source": ["!", "%"]}]})),
    "notebook-non-string-line": ("nb.ipynb", json.dumps({"cells": [
        {"cell_type": "code", "source": ["x = 1\n", 7, None]}]})),
    "notebook-syntax-error": ("nb.ipynb", json.dumps({"cells": [
        {"cell_type": "code", "source": "def f(:\n    !ls\n"}]})),
    "cmake-unclosed": ("CMakeLists.txt", 'project(x "CUDA\n'),
    "shell-unclosed": ("run.sh", "echo \"$(ls\nexport X='\n"),
    "makefile-odd": ("Makefile", "\t\t\n:\n$(shell\nifeq\nendif\nendif\n"),
    "dockerfile-odd": ("Dockerfile", "FROM\nRUN \\\nENV\nARG =\nRUN [\"unclosed\n"),
    "huge-requirements": ("requirements.txt", HUGE + "\n"),
    "huge-shell": ("run.sh", f"echo {HUGE} && true\n"),
    "huge-yaml": ("environment.yml", f"dependencies:\n  - {HUGE}\n"),
    "huge-notebook": ("nb.ipynb", json.dumps({"cells": [{"cell_type": "code",
                                                         "source": f"x = '{HUGE}'"}]})),
}
EMPTY_KINDS = ["environment.yml", "docker-compose.yml", ".github/workflows/ci.yml",
               ".gitlab-ci.yml", "pyproject.toml", "setup.cfg", "requirements-dev.txt",
               "Dockerfile", "Makefile", "CMakeLists.txt", "run.sh", "libops.so", "setup.py"]


def _write(root: Path, name: str, content: str | bytes) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)


def _run(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict], str]:
    code = main([str(root), "--output-format", "json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


@pytest.mark.parametrize(("name", "content"), list(CASES.values()), ids=list(CASES))
def test_a_bad_file_does_not_stop_the_run(tmp_path, capsys, name, content):
    good_name = GOOD[0] if name != GOOD[0] else "requirements-extra.txt"
    _write(tmp_path, good_name, GOOD[1])
    _write(tmp_path, name, content)
    code, found, err = _run(tmp_path, capsys)
    assert err == ""
    assert code == 1
    bad = [f for f in found if Path(f["filename"]).name == Path(name).name]
    assert len(bad) <= 1, bad
    assert all(f["code"] is None for f in bad)
    assert not any("could not read the file" in f["message"] for f in found)  # a rule crashed
    assert any(f["code"] == "CUD402" and f["filename"].endswith(good_name) for f in found)


def test_empty_files_are_quiet(tmp_path, capsys):
    for name in EMPTY_KINDS:
        _write(tmp_path, name, "")
    assert _run(tmp_path, capsys) == (0, [], "")


def test_an_empty_cuda_source_is_still_a_cuda_source(tmp_path, capsys):
    _write(tmp_path, "kernel.cu", "")
    _, found, _ = _run(tmp_path, capsys)
    assert [f["code"] for f in found] == ["CUD302"]


def test_an_empty_notebook_file_is_an_error_line(tmp_path, capsys):
    _write(tmp_path, "nb.ipynb", "")
    _, found, _ = _run(tmp_path, capsys)
    assert [(f["code"], f["message"]) for f in found] == [
        (None, "not a notebook: invalid JSON: Expecting value")]

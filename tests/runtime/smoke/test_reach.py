"""A run's hazards are those of the code its target can reach, not of its whole file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalint.commands.smoke import main
from cudalint.runtime.smoke.reach import reachable_lines

from .helpers import TARGETS, target


def _smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> dict:
    path = tmp_path / "report.json"
    main([target(name), "--in-process", "--json", str(path)])
    capsys.readouterr()
    return json.loads(path.read_text())


def test_a_healthy_function_beside_float64_and_eigvals_lists_no_hazard(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _smoke(tmp_path, capsys, "mixed_file.py:healthy")
    assert report["hazards"] == []
    assert report["elsewhere"]["findings"] == 2  # CUD601 and CUD602, in the other functions
    assert report["verdict"] == "pass"


def test_a_function_that_calls_them_lists_both(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _smoke(tmp_path, capsys, "mixed_file.py:uses_both")
    subjects = {hazard["subject"]: hazard for hazard in report["hazards"]}
    assert {"aten::linalg_eig", "float64"} <= set(subjects)
    assert any("(CUD602)" in where for where in subjects["aten::linalg_eig"]["where"])
    assert "elsewhere" not in report


def _write(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return {name: root / name for name in files}


def test_reach_follows_imports_of_the_project_and_stops_at_the_rest(tmp_path: Path) -> None:
    files = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/model.py": ("import torch\n"                      # 1
                         "SCALE = 2\n"                          # 2
                         "def unused():\n"                      # 3
                         "    return torch.float64\n"           # 4
                         "class Net:\n"                         # 5
                         "    def forward(self, x):\n"          # 6
                         "        return helper(x)\n"           # 7
                         "def helper(x):\n"                     # 8
                         "    return x\n"),                     # 9
        "pkg/target.py": ("from .model import Net\n"           # 1
                          "from pkg import model as m\n"        # 2
                          "def step(device):\n"                 # 3
                          "    return Net().forward(m.SCALE)\n"  # 4
                          "def other(device):\n"                # 5
                          "    return m.unused()\n"),           # 6
    })
    lines = reachable_lines(files, "pkg/target.py", "step")
    assert lines is not None
    assert lines["pkg/target.py"] == {1, 2, 3, 4}
    assert lines["pkg/model.py"] == {1, 2, 5, 6, 7, 8, 9}  # module level, Net, helper
    assert reachable_lines(files, "pkg/target.py", "missing") is None


def test_the_targets_folder_imports_its_siblings_by_name() -> None:
    files = {name: TARGETS / name for name in ("mixed_file.py", "tiny_model.py")}
    lines = reachable_lines(files, "mixed_file.py", "healthy")
    assert lines is not None and "tiny_model.py" in lines
    source = (TARGETS / "mixed_file.py").read_text().splitlines()
    eig = next(i for i, line in enumerate(source, 1) if "eigvals" in line)
    assert eig not in lines["mixed_file.py"]

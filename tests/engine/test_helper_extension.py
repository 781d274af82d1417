"""A helper `--fix` wrote and its user then edited keeps every byte of theirs when a later
fix extends it (cudalint.runtime.helper.extended_module_text); one that cannot be extended so
is refused with one line, and the file that would import it is not written. A configured
`helper = "pkg.device"` the project lacks is written, or refused (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.runtime.helper import helper_module_text, module_names

USER_FUNCTION = '''

def team_device():
    """Our cluster's rule: the helper's choice, named for the team."""
    return pick_device()
'''
MOVE = "import torch\n\nx = torch.ones(2).cuda()\n"
SYNC = "import torch\n\ntorch.cuda.synchronize()\n"


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "lab"\n')
    return tmp_path


def _fix(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, str]:
    """The exit code, and what was printed (stdout, then stderr)."""
    code = main(["check", "--no-cache", "--fix", *(str(p) for p in paths)])
    printed = capsys.readouterr()
    return code, printed.out + printed.err


def test_an_edited_helper_keeps_the_users_lines_when_extended(tmp_path, capsys):
    root = _project(tmp_path)
    (root / "a.py").write_text(MOVE)
    _fix(capsys, root / "a.py")
    helper = root / "_device.py"
    edited = helper.read_text().replace('ENV_VAR = "CUDALINT_DEVICE"',
                                        'ENV_VAR = "LAB_DEVICE"  # our variable')
    edited += USER_FUNCTION
    helper.write_text(edited)
    (root / "b.py").write_text(SYNC)
    code, err = _fix(capsys, root / "b.py")
    assert code == 0, err
    extended = helper.read_text()
    assert "def synchronize(" in extended and module_names(extended) >= {"synchronize"}
    assert USER_FUNCTION in extended and 'ENV_VAR = "LAB_DEVICE"  # our variable\n' in extended
    lines = iter(extended.splitlines())  # every line of theirs, in their order
    assert all(any(line == mine for line in lines) for mine in edited.splitlines())
    done = subprocess.run([sys.executable, "-c", "import a, b, _device\n"
                           "print(_device.team_device().type, _device.__all__)"],
                          cwd=root, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "'synchronize'" in done.stdout
    assert _fix(capsys, root / "a.py", root / "b.py")[0] == 0  # nothing more to add
    assert helper.read_text() == extended


def test_an_unedited_helper_is_the_same_whatever_the_order_of_the_fixes(tmp_path, capsys):
    root = _project(tmp_path)
    (root / "a.py").write_text(MOVE)
    (root / "b.py").write_text(SYNC)
    _fix(capsys, root / "a.py")
    _fix(capsys, root / "b.py")
    assert (root / "_device.py").read_text() == helper_module_text(["pick_device",
                                                                     "synchronize"])


def test_a_helper_that_cannot_be_extended_safely_is_refused(tmp_path, capsys):
    root = _project(tmp_path)
    (root / "a.py").write_text(MOVE)
    _fix(capsys, root / "a.py")
    helper = root / "_device.py"
    text = helper.read_text()
    start = text.index("__all__ = [")
    end = text.index("]\n", start) + 2
    edited = text[:start] + '__all__ = [name for name in dir() if name.endswith("device")]\n' \
        + text[end:]
    helper.write_text(edited)
    (root / "b.py").write_text(SYNC)
    code, printed = _fix(capsys, root / "b.py")
    assert code == 2
    assert helper.read_text() == edited
    assert (root / "b.py").read_text() == SYNC  # it would import what is not there
    assert "cannot be extended" in printed and "Traceback" not in printed


def test_a_configured_helper_the_project_lacks_is_written_in_its_package(tmp_path, capsys):
    root = tmp_path
    (root / "pyproject.toml").write_text('[tool.cudalint]\nhelper = "pkg.device"\n')
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "m.py").write_text(MOVE)
    code, err = _fix(capsys, root)
    assert code == 0, err
    assert "from pkg.device import pick_device" in (root / "pkg" / "m.py").read_text()
    assert "def pick_device(" in (root / "pkg" / "device.py").read_text()
    done = subprocess.run([sys.executable, "-c", "import pkg.m"], cwd=root,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_a_configured_helper_in_no_package_of_the_project_is_refused(tmp_path, capsys):
    root = tmp_path
    (root / "pyproject.toml").write_text('[tool.cudalint]\nhelper = "labtools.device"\n')
    (root / "m.py").write_text(MOVE)
    code = main(["check", "--no-cache", "--fix", str(root)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "labtools" in err and "init-helper" in err
    assert (root / "m.py").read_text() == MOVE
    assert sorted(p.name for p in root.iterdir()) == ["m.py", "pyproject.toml"]


def test_a_class_of_a_sibling_module_with_its_own_cuda_is_not_moved_by_a_safe_fix(
        tmp_path, capsys):
    """One file fixed alone: the project's other modules count (Sensor is no nn.Module)."""
    root = _project(tmp_path)
    (root / "sensors.py").write_text("class Sensor:\n    def cuda(self):\n        return self\n")
    source = "from sensors import Sensor\n\nsensor = Sensor().cuda()\n"
    (root / "run.py").write_text(source)
    _fix(capsys, root / "run.py")
    assert (root / "run.py").read_text() == source
    assert not (root / "_device.py").exists()


def test_the_diff_of_an_edited_helper_only_adds(tmp_path, capsys):
    root = _project(tmp_path)
    (root / "a.py").write_text(MOVE)
    _fix(capsys, root / "a.py")
    helper = root / "_device.py"
    helper.write_text(helper.read_text() + USER_FUNCTION)
    (root / "b.py").write_text(SYNC)
    main(["check", "--no-cache", "--diff", str(root / "b.py")])
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("--- ") and line.endswith("_device.py"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("--- ")),
               len(lines))
    diff = lines[start + 2 : end]
    assert "+def synchronize(device: Any = None) -> None:" in diff
    assert '+    "synchronize",' in diff
    assert not [line for line in diff if line.startswith("-")]  # nothing of theirs goes
    assert helper.read_text().endswith(USER_FUNCTION)  # --diff writes nothing

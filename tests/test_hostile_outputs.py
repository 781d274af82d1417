"""Hostile trees, round three: the files a command is told to write (`init-helper`, `smoke
--init`, a report's `-o`) are never written through a symbolic link, whether at the file's
name (dangling or not, `--force` or not) or among its folders (a link a cloned repository
holds); each refusal is one line and exit 2."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.runtime.helper import helper_source


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cloned project (the current folder) beside a folder outside it."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    monkeypatch.chdir(root)
    return root


def _outside(project: Path) -> dict[str, str]:
    folder = project.parent / "outside"
    return {p.name: p.read_text() for p in folder.iterdir()}


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    return err


def test_init_helper_does_not_create_a_file_through_a_dangling_link(project, capsys):
    (project / "device.py").symlink_to("../outside/x.py")
    assert main(["init-helper", "device.py"]) == 2
    assert "symbolic link" in _one_line(capsys)
    assert _outside(project) == {}
    assert os.readlink(project / "device.py") == "../outside/x.py"


def test_init_helper_force_does_not_overwrite_a_links_target(project, capsys):
    (project.parent / "outside" / "x.py").write_text("# theirs\n")
    (project / "device.py").symlink_to("../outside/x.py")
    assert main(["init-helper", "--force", "device.py"]) == 2
    assert "symbolic link" in _one_line(capsys)
    assert _outside(project) == {"x.py": "# theirs\n"}


def test_init_helper_does_not_write_through_a_folder_link_in_its_path(project, capsys):
    (project / "pkg").symlink_to("../outside")
    assert main(["init-helper", "pkg/device.py"]) == 2
    assert f"{project / 'pkg'} is a symbolic link" in _one_line(capsys)
    assert _outside(project) == {}
    assert main(["init-helper", "pkg/sub/device.py"]) == 2  # nor make folders there
    _one_line(capsys)
    assert _outside(project) == {}


def test_init_helper_still_writes_new_folders_and_overwrites_with_force(project, capsys):
    assert main(["init-helper", "src/pkg/device.py"]) == 0
    written = project / "src" / "pkg" / "device.py"
    assert written.read_text() == helper_source()
    written.write_text("# old\n")
    os.link(written, project / "twin.py")
    assert main(["init-helper", "--force", "src/pkg/device.py"]) == 0
    assert (project / "twin.py").read_text() == helper_source()  # rewritten in place
    capsys.readouterr()


MODEL = "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    pass\n"


@pytest.mark.parametrize("force", [False, True])
def test_smoke_init_does_not_write_through_a_target_link(project, capsys, force):
    """The old code took the folder the link points to for the project's, read the folder
    above it and created the file there."""
    (project / "model.py").write_text(MODEL)
    (project.parent / "pyproject.toml").write_text("")
    (project / "smoke_target.py").symlink_to("../outside/x.py")
    assert main(["smoke", "--init", *(["--force"] if force else [])]) == 2
    assert "smoke_target.py: not written: a symbolic link" in _one_line(capsys)
    assert _outside(project) == {}


def test_smoke_init_takes_its_own_folder_for_the_project(project, capsys):
    (project / "model.py").write_text(MODEL)
    (project.parent / "pyproject.toml").write_text("")
    (project.parent / "other.py").write_text(MODEL.replace("Net", "Other"))
    assert main(["smoke", "--init"]) == 0
    assert "return Net()" in (project / "smoke_target.py").read_text()
    capsys.readouterr()


@pytest.mark.parametrize("option", ["-o", "--json"])
def test_report_output_is_not_written_through_a_link(project, capsys, option):
    (project / "train.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    (project.parent / "outside" / "x.html").write_text("theirs")
    (project / "report.html").symlink_to("../outside/x.html")
    (project / "dangling.html").symlink_to("../outside/new.html")
    for name in ("report.html", "dangling.html"):
        assert main(["report", ".", option, name]) == 2
        assert f"{name}: not written: a symbolic link" in _one_line(capsys)
    assert _outside(project) == {"x.html": "theirs"}
    assert main(["report", ".", option, "written.html"]) == 0
    assert (project / "written.html").stat().st_size > 0

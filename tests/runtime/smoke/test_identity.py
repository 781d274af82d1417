"""Every smoke JSON carries identity.REQUIRED: what ran, on which project state and files, with
which tolerance (and where it came from) and which packages."""

from __future__ import annotations

import datetime
import hashlib
import json
import subprocess
from pathlib import Path

import numpy
import pytest
import torch

import cudalint
from cudalint.runtime.smoke import identity
from cudalint.runtime.smoke.command import main
from cudalint.runtime.smoke.compare import Tolerance

from .helpers import check, target

TARGET = '''\
import os

import torch

from net import make_net


def step(device):
    torch.manual_seed(0)
    net = make_net().to(device)
    loss = net(torch.ones(2, 3).to(device)).sum()
    # SMOKE_SHIFT moves the loss, as another machine's summation order would
    return {"loss": loss.detach() + float(os.environ.get("SMOKE_SHIFT", "0")),
            "weight": net.weight.detach()}
'''
NET = '''\
import torch


def make_net():
    return torch.nn.Linear(3, 1)
'''
PYPROJECT = '''\
[project]
name = "tiny-project"
version = "0.1"
'''
SMOKE_TABLE = '''
[tool.cudalint.smoke]
rtol = 1e-4

[tool.cudalint.smoke.outputs.loss]
atol = 0.5
'''


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                    "-c", "commit.gpgsign=false", *args], check=True, capture_output=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project in a git repository, committed: a target, the module it imports, a
    pyproject.toml."""
    root = tmp_path / "tiny"
    root.mkdir()
    (root / "smoke_target.py").write_text(TARGET)
    (root / "net.py").write_text(NET)
    (root / "pyproject.toml").write_text(PYPROJECT)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "start")
    return root


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_isolated_cpu_run_carries_every_required_field(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The real path: `cudalint smoke` with its child process, `--json FILE`."""
    out = project / "run.json"
    assert main([f"{project / 'smoke_target.py'}:step", "--json", str(out)]) == 0
    capsys.readouterr()
    data = identity.validate(json.loads(out.read_text()), str(out))
    assert list(data)[:3] == ["schema", "cudalint", "date"]
    assert data["schema"] == identity.SCHEMA == "cudalint-smoke/1"
    assert data["cudalint"] == cudalint.__version__
    date = datetime.datetime.fromisoformat(data["date"])
    assert date.utcoffset() == datetime.timedelta(0)
    assert abs(datetime.datetime.now(datetime.timezone.utc) - date).total_seconds() < 300
    commit = subprocess.run(["git", "-C", str(project), "rev-parse", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()
    # run.json is untracked: the tree is clean
    assert data["project"] == {"name": "tiny-project", "root": str(project.resolve()),
                               "commit": commit, "dirty": False}
    # the target's file and the project module it imported, and nothing of cudalint's
    assert data["files"] == {"net.py": _sha256(project / "net.py"),
                             "smoke_target.py": _sha256(project / "smoke_target.py")}
    assert data["tolerance"] == {"rtol": None, "atol": None, "source": "default",
                                 "per_output": {}, "float32": {"rtol": 1.3e-06, "atol": 1e-05}}
    packages = data["packages"]
    assert packages["torch"] == torch.__version__
    assert packages["numpy"] == numpy.__version__
    assert packages["cudalint"] == cudalint.__version__
    assert list(packages) == sorted(packages, key=lambda name: (name.lower(), name))
    assert identity.matches(data, project) == []


def test_a_dirty_tree_and_a_changed_file_are_recorded(project: Path, smoke) -> None:
    (project / "net.py").write_text(NET + "# edited\n")
    code, report, _, _ = smoke(f"{project / 'smoke_target.py'}:step")
    assert code == 0
    identity.validate(report, "report")
    assert report["project"]["dirty"] is True
    assert report["files"]["net.py"] == _sha256(project / "net.py")
    (project / "net.py").write_text(NET)
    assert identity.matches(report, project) == ["net.py changed since the run"]


def test_outside_git_commit_and_dirty_are_none(tmp_path: Path, smoke) -> None:
    (tmp_path / "smoke_target.py").write_text(TARGET)
    (tmp_path / "net.py").write_text(NET)
    code, report, _, _ = smoke(f"{tmp_path / 'smoke_target.py'}:step")
    assert code == 0
    project = report["project"]
    if project["commit"] is not None:  # pytest's tmp folder sits inside some git work tree
        pytest.skip("the temporary folder is inside a git work tree")
    assert project == {"name": tmp_path.name, "root": str(tmp_path.resolve()), "commit": None,
                       "dirty": None}


def _save_reference(project: Path, smoke) -> Path:
    reference = project / "ref.safetensors"
    code, report, _, _ = smoke(f"{project / 'smoke_target.py'}:step", "--save-reference",
                               str(reference))
    assert code == 0, report["checks"]
    return reference


def test_the_pyproject_tolerance_is_used_and_recorded(project: Path, smoke,
                                                      monkeypatch) -> None:
    reference = _save_reference(project, smoke)
    monkeypatch.setenv("SMOKE_SHIFT", "0.25")
    run = (f"{project / 'smoke_target.py'}:step", "--reference", str(reference))
    code, report, _, _ = smoke(*run)
    assert code == 1, "the per-dtype default does not cover the shift"
    assert report["tolerance"]["source"] == "default"
    assert "loss" in check(report, "compare")["detail"]

    with (project / "pyproject.toml").open("a") as file:
        file.write(SMOKE_TABLE)
    code, report, _, _ = smoke(*run)
    assert code == 0, check(report, "compare")
    assert report["tolerance"] == {"rtol": 1e-4, "atol": None, "source": "[tool.cudalint.smoke]",
                                   "per_output": {"loss": {"rtol": None, "atol": 0.5}},
                                   "float32": {"rtol": 1e-4, "atol": 1e-05},
                                   "committed": False}  # appended after the commit
    # The numbers applied to each output: the loss's own atol, the table's rtol.
    assert [(d["output"], d["rtol"], d["atol"], d["within"]) for d in report["differences"]] == [
        ("loss", 1e-4, 0.5, True), ("weight", 1e-4, 1e-05, True)]

    # The command line replaces the whole table, the per-output entries with it.
    code, report, _, _ = smoke(*run, "--rtol", "1e-3")
    assert code == 1
    assert report["tolerance"] == {"rtol": 1e-3, "atol": None, "source": "command line",
                                   "per_output": {}, "float32": {"rtol": 1e-3, "atol": 1e-05}}
    code, report, _, _ = smoke(*run, "--atol", "0.3")
    assert code == 0
    assert report["tolerance"]["source"] == "command line"
    assert report["tolerance"]["atol"] == 0.3


@pytest.mark.parametrize(("table", "message"), [
    ("[tool.cudalint.smoke]\nrtol = 'loose'\n", "rtol must be a number from 0 up"),
    ("[tool.cudalint.smoke]\nrtl = 1e-3\n", "unknown key 'rtl'"),
    ("[tool.cudalint.smoke.outputs.loss]\natol = -1\n", "outputs.loss]: atol must be"),
    ("[tool.cudalint.smoke]\noutputs = 3\n", "outputs must be a table"),
    # issue 31, items 14 and 17: a number beyond any float, digits past int()'s limit, nesting
    ("[tool.cudalint.smoke]\nrtol = 1" + "0" * 400 + "\n", "rtol must be a number from 0 up"),
    ("[tool.cudalint.smoke]\natol = " + "9" * 5000 + "\n",
     "invalid TOML: line 5: atol: a number of more than 4300 digits"),
    ("[tool.cudalint.smoke]\nrtol = " + "[" * 5000 + "]" * 5000 + "\n",
     "invalid TOML: arrays or tables nested too deeply"),
], ids=["rtol-text", "unknown-key", "negative-atol", "outputs-number", "rtol-huge",
        "atol-digits", "rtol-deep"])
def test_a_bad_smoke_table_is_a_one_line_error(project: Path, capsys, table: str,
                                               message: str) -> None:
    (project / "pyproject.toml").write_text(PYPROJECT + table)
    assert main([f"{project / 'smoke_target.py'}:step"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cudalint smoke: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_a_child_that_dies_still_writes_a_valid_report(capsys) -> None:
    """The parent writes the report itself when the child ends without one."""
    assert main([target("hostile.py:hard_exit"), "--json", "-"]) == 1
    data = identity.validate(json.loads(capsys.readouterr().out), "stdout")
    assert data["verdict"] == "fail"
    assert list(data["files"]) == ["tests/runtime/smoke/targets/hostile.py"]
    assert data["tolerance"]["source"] == "default"


def test_per_output_tolerances_match_a_name_or_its_leaves() -> None:
    tolerance = Tolerance(rtol=1e-4, per_output={"model": Tolerance(atol=1.0),
                                                 "model['head.bias']": Tolerance(rtol=0.5)})
    assert tolerance.for_path("loss") is tolerance
    assert tolerance.for_path("model['fc.weight']") == Tolerance(rtol=1e-4, atol=1.0)
    assert tolerance.for_path("model['head.bias']") == Tolerance(rtol=0.5, atol=None)
    assert tolerance.for_path("models") is tolerance


def test_stamp_without_a_run() -> None:
    fields = identity.stamp(Path(__file__).parent, [Path(__file__), Path("/elsewhere.py")],
                            {"rtol": None, "atol": None, "source": "default", "per_output": {}})
    assert set(fields) == set(identity.REQUIRED) - {"verdict", "target", "device",
                                                    "environment", "checks"}
    assert fields["files"] == {Path(__file__).name: _sha256(Path(__file__))}
    assert fields["date"].endswith("+00:00")


def test_a_huge_pyproject_is_one_line_and_never_read_whole(project: Path, capsys) -> None:
    """The smoke table is read as every configuration file is: within a size limit (issue 31,
    item 14): a sparse gigabyte costs no memory and is one line, exit 2."""
    import resource

    big = project / "pyproject.toml"
    with big.open("wb") as file:
        file.write(b"[tool.cudalint.smoke]\nrtol = 1e-4\n")
        file.truncate(1 << 30)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert main([f"{project / 'smoke_target.py'}:step"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cudalint smoke: error: ") and err.count("\n") == 1, err
    assert str(big) in err and "larger than 1 MiB" in err
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # kB

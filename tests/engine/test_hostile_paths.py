"""Hostile trees, paths and the cache: a repository's links never make a run write outside
it (a linked cache folder, a linked folder named on the command line), a project's own
modules never stand in for cudalint's, and a cache a repository ships is never replayed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.engine.running.cache import FOLDER
from tests.engine.fixing_run import GOOD, assert_fixed, good_file, run

CUDA_LINE = "y = torch.zeros(1).cuda()\n"


@pytest.fixture(autouse=True)
def user_cache(tmp_path_factory, monkeypatch):
    """The user's cache folder (where the cache's key is kept), outside every project."""
    folder = tmp_path_factory.mktemp("user-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    monkeypatch.delenv("CUDALINT_CACHE_DIR", raising=False)
    monkeypatch.delenv("CUDALINT_NO_CACHE", raising=False)
    return folder


def _project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n')
    good_file(root)
    return root


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


# 1. A cache folder that is a link, or leads out of the project, is not used.

@pytest.mark.parametrize("how", ["link-to-parent", "environment-link", "text-link"])
def test_a_linked_cache_folder_is_never_written_through(tmp_path, capsys, monkeypatch, how):
    outer = tmp_path / "outer"
    project = _project(outer / "project")
    (outer / ".gitignore").write_text("keep-me\n")
    before = _listing(outer)
    if how == "link-to-parent":
        (project / FOLDER).symlink_to("..")
    elif how == "environment-link":
        (project / "elsewhere").symlink_to(outer)
        monkeypatch.setenv("CUDALINT_CACHE_DIR", str(project / "elsewhere"))
    else:
        (project / FOLDER).mkdir()
        (project / FOLDER / "text").symlink_to(outer)
    monkeypatch.chdir(project)
    code = main(["check", "."])
    captured = capsys.readouterr()
    assert code == 1 and "CUD102" in captured.out
    assert captured.err.count("\n") <= 1 and "Traceback" not in captured.err, captured.err
    assert _listing(outer) == before
    assert sorted(p.name for p in outer.iterdir()) == [".gitignore", "project"]
    assert main(["check", "."]) == 1  # again: still nothing written there
    assert _listing(outer) == before


# 4. --fix writes nothing through a linked folder named on the command line.

def test_fix_refuses_a_linked_folder_named_on_the_command_line(tmp_path, capsys, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.py"
    victim.write_text(GOOD)
    project = _project(tmp_path / "project")
    (project / ".git").mkdir()
    (project / "out").symlink_to("../outside")
    monkeypatch.chdir(project)
    assert main(["check", "--fix", "out"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cudalint: error: out:"), err
    assert "symbolic link" in err
    assert victim.read_text() == GOOD
    assert sorted(p.name for p in outside.iterdir()) == ["victim.py"]
    # a file below the linked folder, and the link among other paths, are refused alike
    assert main(["check", "--fix", "out/victim.py"]) == 2
    assert main(["check", "--fix", "good.py", "out"]) == 2
    assert victim.read_text() == GOOD and (project / "good.py").read_text() == GOOD
    capsys.readouterr()
    # checking (no --fix) still reads and reports it
    outcome = run(capsys, "check", "out")
    assert outcome.code == 1 and outcome.codes("victim.py") == ["CUD102"]


def test_fix_refuses_a_linked_folder_inside_the_project_too(tmp_path, capsys, monkeypatch):
    project = _project(tmp_path / "project")
    (project / "real").mkdir()
    inner = good_file(project / "real")
    (project / "alias").symlink_to("real")
    monkeypatch.chdir(project)
    assert main(["check", "--fix", "alias"]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert inner.read_text() == GOOD
    assert main(["check", "--fix", "real"]) == 0
    assert_fixed(inner)


# 9. `python -m cudalint` from a project's folder imports cudalint's modules, not the project's.

def test_python_m_cudalint_does_not_import_the_projects_modules(tmp_path):
    project = _project(tmp_path / "project")
    (project / "pyproject.toml").write_text('[tool.cudalint]\nselect = ["CUD1"]\n')
    (project / "tomllib.py").write_text("raise RuntimeError('the project tomllib')\n")
    (project / "libcst").mkdir()
    (project / "libcst" / "__init__.py").write_text("raise RuntimeError('the project libcst')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "cudalint", "check", "--no-cache",
                           "--output-format", "concise", "good.py"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert "the project" not in done.stderr, done.stderr
    assert done.returncode == 1 and "CUD102" in done.stdout, (done.stdout, done.stderr)


# 11. Cache entries are validated and authenticated.

_TRAIN = "import torch\nmodel = Net().cuda()\nx = torch.zeros(1, device='cuda')\n"


@pytest.fixture
def cached_project(tmp_path, monkeypatch):
    project = _project(tmp_path / "project")
    (project / "train.py").write_text(_TRAIN)
    for number in range(3):
        (project / f"clean{number}.py").write_text(f"x = {number}\n")
    monkeypatch.chdir(project)
    return project


def _concise(capsys) -> tuple[int, str, str]:
    code = main(["check", ".", "--output-format", "concise"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _indexes(project: Path) -> list[Path]:
    return sorted((project / FOLDER).glob("index-*.json"))


@pytest.fixture
def settled(monkeypatch):
    """Every file's status stands for its content (not only those changed two seconds ago),
    so that a lookup trusts the entry's digest and facts without reading the file."""
    from cudalint.engine.running import cache as cache_module

    monkeypatch.setattr(cache_module, "_SETTLED_NS", -10**12)


_ODD_FINDING = {"code": 5, "message": 1, "location": ["a", "b"], "end": [1, 1],
                "severity": "error", "guarded": False, "cell": None, "extra": {}, "fix": None}


@pytest.mark.parametrize("bad", [5, [], "x", None, {"key": 1}, {"digest": 5},
                                 {"findings": 1}, {"status": "abc"}, {"facts": 7},
                                 {"facts": [1, "a"]}, {"findings": [_ODD_FINDING]}])
def test_an_entry_of_the_wrong_type_is_a_miss(cached_project, settled, capsys, bad):
    """Written through the cache itself (so it is signed): still a miss, never an abort."""
    from cudalint.engine.running import cache as cache_module

    fresh = _concise(capsys)
    opened = []
    real_open = cache_module.Cache.open

    def open_and_keep(*args, **kwargs):
        opened.append(real_open(*args, **kwargs))
        return opened[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cache_module.Cache, "open", open_and_keep)
        assert _concise(capsys) == fresh
    [cache] = opened
    for path, entry in cache.files.items():
        real_status = os.stat(path)
        status = [real_status.st_size, real_status.st_mtime_ns, real_status.st_ctime_ns,
                  real_status.st_ino, real_status.st_dev]
        cache.put(Path(path), {**entry, "status": status, **bad} if isinstance(bad, dict)
                  else bad)
    cache.save()
    assert _concise(capsys) == fresh
    assert _concise(capsys) == fresh


def test_a_committed_cache_that_hides_findings_is_not_replayed(cached_project, capsys):
    fresh = _concise(capsys)
    assert fresh[0] == 1 and "train.py:2:" in fresh[1]
    for index in _indexes(cached_project):
        loaded = json.loads(index.read_text())
        for entry in loaded["files"].values():
            entry["findings"] = []
        index.write_text(json.dumps(loaded))
    assert _concise(capsys) == fresh


def test_a_cache_made_with_another_key_is_not_replayed(cached_project, settled, capsys,
                                                       monkeypatch, tmp_path):
    """The same install and path, another user (another key): the cache is checked again."""
    from cudalint.engine.running import runner

    fresh = _concise(capsys)
    checked = []
    real_check = runner.check_python

    def counting(*args, **kwargs):
        checked.append(args[0])
        return real_check(*args, **kwargs)

    monkeypatch.setattr(runner, "check_python", counting)
    assert _concise(capsys) == fresh
    assert checked == [], "the user's own cache was not replayed"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "another-user"))
    assert _concise(capsys) == fresh
    assert checked, "the other key's cache was replayed"


def test_the_key_is_private_and_outside_the_project(cached_project, capsys, user_cache):
    _concise(capsys)
    key = user_cache / "cudalint" / "key"
    assert key.is_file() and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert len(key.read_bytes()) >= 32
    assert not list(cached_project.rglob("key"))


def test_no_cache_when_the_users_cache_folder_cannot_be_written(cached_project, capsys,
                                                                monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    code, out, err = _concise(capsys)
    assert code == 1 and "train.py:2:" in out and err == ""
    assert not (cached_project / FOLDER).exists()

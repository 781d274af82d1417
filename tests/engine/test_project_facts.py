"""The one place a file's project facts come from (engine/running/project_facts.py): the root
is the nearest pyproject.toml, setup.py or .git above the file, the tree facts come from every
Python file of that project (not from the files a run was given), and the scan's cache means
a run over one file reads only the files changed since the last run."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.config import Config
from cudalint.engine.running import cache
from cudalint.engine.running.project_facts import ProjectFacts
from cudalint.kinds import FileKind

SENSOR = "class Sensor:\n    def cuda(self):\n        return self\n"


def _project(root: Path, files: int = 6) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    (root / "pkg" / "__init__.py").write_text("")
    for i in range(files):
        (root / "pkg" / f"m{i}.py").write_text(f"import torch\n\n\ndef f{i}(x):\n"
                                               f"    return x.cuda()\n")
    return root


@pytest.fixture
def settled(monkeypatch):
    """Files made in a test count as settled (cache.file_status: none is recorded otherwise)."""
    monkeypatch.setattr(cache, "_SETTLED_NS", 0)


def test_the_root_is_the_nearest_project_folder_whatever_the_run_starts_at(tmp_path):
    root = _project(tmp_path / "repo")
    sub = root / "ext" / "setup.py"  # a folder with its own setup.py: a project of its own
    sub.parent.mkdir()
    sub.write_text("from setuptools import setup\nsetup(name='ext')\n")
    for start in (root, root / "pkg", root / "ext"):
        facts = ProjectFacts(Config(root=start))
        assert facts.root_of(root / "pkg" / "m0.py") == root.resolve()
        assert facts.root_of(root / "ext" / "kernels.py") == sub.parent.resolve()
        assert facts.root_of(root / "new_file.py") == root.resolve()  # need not exist


def test_a_file_of_an_installed_distribution_belongs_to_it(tmp_path):
    _project(tmp_path)  # the project the environment sits in
    package = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages" / "lib_x" / "nn"
    package.mkdir(parents=True)
    facts = ProjectFacts(Config(root=tmp_path))
    assert facts.root_of(package / "m.py") == package.parent.resolve()


def test_the_tree_facts_come_from_the_whole_project(tmp_path):
    """A one-file run sees a `cuda` method defined in another module: the fix is unsafe."""
    root = _project(tmp_path)
    (root / "pkg" / "sensor.py").write_text(SENSOR)
    facts = ProjectFacts(Config(root=root / "pkg"), cache=False)
    settings = facts.for_file(root / "pkg" / "m0.py", FileKind.PYTHON)
    assert settings.own_cuda_method
    assert settings.first_party >= {"pkg"}


def test_excluded_files_tell_the_scan_nothing(tmp_path):
    root = _project(tmp_path)
    (root / "build").mkdir()
    (root / "build" / "sensor.py").write_text(SENSOR)  # `build` is a default exclude
    (root / ".gitignore").write_text("generated/\n")
    (root / "generated").mkdir()
    (root / "generated" / "sensor.py").write_text(SENSOR)
    facts = ProjectFacts(Config(root=root), cache=False)
    assert not facts.settings(root.resolve()).own_cuda_method


def test_a_second_run_reads_only_the_files_changed(tmp_path, settled):
    root = _project(tmp_path, files=6)
    first = ProjectFacts(Config(root=root))
    assert not first.settings(root.resolve()).own_cuda_method
    assert first.read == 7  # every Python file of the project, once
    again = ProjectFacts(Config(root=root))
    assert not again.settings(root.resolve()).own_cuda_method
    assert again.read == 0  # known from the scan's cache
    changed = root / "pkg" / "m3.py"
    changed.write_text(changed.read_text() + "\n\n" + SENSOR)
    after = ProjectFacts(Config(root=root))
    assert after.settings(root.resolve()).own_cuda_method  # the key changed with the file
    assert after.read == 1


def test_the_root_files_are_read_again_only_when_one_changes(tmp_path, settled, monkeypatch):
    """What pyproject.toml, setup.py, requirements say is kept by their status: a one-file
    run parses none of them again, and a new or changed one is read."""
    from cudalint.engine.project import facts as project

    root = _project(tmp_path, files=1)
    read: list[Path] = []
    real = project.root_facts
    monkeypatch.setattr(project, "root_facts", lambda at: read.append(at) or real(at))

    def target() -> tuple[int, int]:
        return ProjectFacts(Config(root=root)).settings(root.resolve()).target_torch

    assert target() == (2, 6) and len(read) == 1  # the default: the project states none
    assert target() == (2, 6) and len(read) == 1
    (root / "requirements.txt").write_text("torch>=2.1\n")  # a file that was not there
    assert target() == (2, 1) and len(read) == 2
    (root / "requirements.txt").write_text("torch>=1.13\n")
    assert target() == (1, 13) and len(read) == 3
    assert target() == (1, 13) and len(read) == 3
    # A conda environment named as no pattern knows (kinds.conda_environments) counts too.
    (root / "gpu_env.yml").write_text("name: p\nchannels: [pytorch]\n"
                                      "dependencies:\n  - pytorch=1.11\n")
    assert target() == (1, 11) and len(read) == 4


def test_a_cache_signed_with_another_key_is_not_read(tmp_path, settled):
    """A committed scan cache could hide a `cuda` method and make the fix look safe."""
    root = _project(tmp_path, files=2)
    (root / "pkg" / "sensor.py").write_text(SENSOR)
    ProjectFacts(Config(root=root)).settings(root.resolve())
    indexes = sorted((root / ".cudalint_cache").glob("facts-*.json"))
    assert len(indexes) == 2  # each file's facts, and the summary of the tree's
    for index in indexes:
        data = index.read_bytes()
        planted = data.replace(b"true", b"false")
        assert planted != data
        index.write_bytes(planted)  # the facts changed, the signature not
    facts = ProjectFacts(Config(root=root))
    assert facts.settings(root.resolve()).own_cuda_method
    assert facts.read == 4


def test_a_fix_leaves_the_scan_cache_as_it_found_it(tmp_path, capsys, monkeypatch, settled):
    root = _project(tmp_path, files=2)
    monkeypatch.chdir(root)
    main(["check", "--fix", "pkg/m0.py"])
    capsys.readouterr()
    assert not list(root.glob(".cudalint_cache/facts-*.json"))


def test_a_workflow_named_from_its_own_folder_is_a_workflow(tmp_path, capsys, monkeypatch):
    """The kind of a file named on the command line comes from its absolute path."""
    workflows = _project(tmp_path) / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "gpu.yml").write_text("jobs:\n  test:\n    runs-on: [self-hosted, gpu]\n"
                                       "    steps:\n      - run: nvidia-smi\n")
    found = []
    for cwd, name in ((tmp_path, ".github/workflows/gpu.yml"), (workflows, "gpu.yml")):
        monkeypatch.chdir(cwd)
        main(["check", "--no-cache", "--output-format", "json", "--exit-zero", name])
        found.append(sorted(f["code"] for f in json.loads(capsys.readouterr().out)))
    assert found[0] and found[0] == found[1]
    assert os.getcwd() == str(workflows)


def _cud201(capsys, *args: str) -> list[tuple[str, int]]:
    main(["check", "--select", "CUD201", "--output-format", "json", "--exit-zero", *args])
    return sorted((Path(f["filename"]).name, f["location"]["row"])
                  for f in json.loads(capsys.readouterr().out))


def test_own_modules_are_first_party_whatever_the_way_in(tmp_path, capsys, monkeypatch):
    """A root `pynvml.py` and a namespace folder `deepspeed/` are the project's own whether a
    run checks the project, the one file (a pre-commit hook), from elsewhere, or standard
    input: `import cupy` is the only finding each time."""
    root = _project(tmp_path / "repo", files=1)
    (root / "pynvml.py").write_text("def nvmlInit():\n    pass\n")
    (root / "deepspeed").mkdir()
    (root / "deepspeed" / "config.py").write_text("ZERO_STAGE = 2\n")
    source = "import pynvml\nfrom deepspeed.config import ZERO_STAGE\nimport cupy\n"
    (root / "pkg" / "train.py").write_text(source)
    expected = [("train.py", 3)]
    monkeypatch.chdir(root)
    assert _cud201(capsys, "--no-cache", ".") == expected
    assert _cud201(capsys, "--no-cache", "pkg/train.py") == expected
    monkeypatch.chdir(tmp_path)
    assert _cud201(capsys, "--no-cache", "repo/pkg/train.py") == expected
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source.encode())))
    assert _cud201(capsys, "--no-cache", "--stdin-filename", "repo/pkg/train.py",
                   "-") == expected


def test_a_new_or_removed_own_module_is_seen_through_the_caches(tmp_path, capsys,
                                                                monkeypatch, settled):
    """The scan's cache is keyed by the project's Python files: a namespace folder or a root
    module added or removed changes what is first-party on the next cached one-file run."""
    root = _project(tmp_path, files=1)
    (root / "pkg" / "train.py").write_text("import pynvml\nfrom deepspeed.config import X\n")
    monkeypatch.chdir(root)
    assert _cud201(capsys, "pkg/train.py") == [("train.py", 1), ("train.py", 2)]
    (root / "deepspeed").mkdir()
    (root / "deepspeed" / "config.py").write_text("X = 1\n")
    assert _cud201(capsys, "pkg/train.py") == [("train.py", 1)]
    (root / "pynvml.py").write_text("def nvmlInit():\n    pass\n")
    assert _cud201(capsys, "pkg/train.py") == []
    (root / "deepspeed" / "config.py").unlink()  # an empty folder holds no module
    (root / "pynvml.py").unlink()
    assert _cud201(capsys, "pkg/train.py") == [("train.py", 1), ("train.py", 2)]
    assert list(root.glob(".cudalint_cache/facts-*.json"))  # the caches were used

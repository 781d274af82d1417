"""A file's kind from its name: the name patterns, matched without regular expressions,
answer as fnmatch tries each pattern in order (the first that matches)."""

from __future__ import annotations

import fnmatch
import itertools
import os
from pathlib import Path

from cudalint.kinds import _NAME_PATTERNS, FileKind, by_content, classify, is_conda_environment


def _one_by_one(name: str) -> FileKind | None:
    return next((kind for kind, glob in _NAME_PATTERNS if fnmatch.fnmatchcase(name, glob)),
                None)


def test_the_name_patterns_answer_as_fnmatch_in_order():
    names = {"train.py", "stubs.pyi", "x.PY", "x.pyc", "kernel.h", "Dockerfile.dev",
             "dockerfile", "libcudart.so.12", "requirements-dev.in", "docker-compose.gpu.yml",
             "CMakeLists.txt", "x.py\n", "README.md", ".gitlab-ci.yml", "job.sbatch",
             # a star matching nothing, parts that would overlap, a part found twice
             ".py", "py", ".so.", "x.so.", "so.so", "requirements.txt.txt", "requirementstxt",
             "Dockerfile.", "Dockerfile", "compose.yaml.yml", "a.so.b.so.c", "conda.yml"}
    for _, glob in _NAME_PATTERNS:
        for star, tail in itertools.product(["", "x", "a.b", "-dev"], ["", ".1", ".txt"]):
            names |= {glob.replace("*", star) + tail, star + glob.replace("*", star)}
    for name in names:
        assert classify(Path("src") / name) is _one_by_one(name), name
    assert classify(Path("Dockerfile.dev")) is FileKind.DOCKERFILE
    assert classify(Path("kernel.h")) is None


def test_the_folder_decides_workflows_actions_and_a_requirements_folder():
    expected = {
        "repo/.github/workflows/ci.yml": FileKind.CI,
        ".github/workflows/ci.yaml": FileKind.CI,
        "repo/.github/actions/setup/action.yml": FileKind.CI,
        "repo/.github/actions/setup/other.yml": None,
        ".github/workflows/requirements.txt": FileKind.REQUIREMENTS,
        "requirements/gpu.in": FileKind.REQUIREMENTS,
        "deps/requirements/base.txt": FileKind.REQUIREMENTS,
        "requirements/environment.yml": FileKind.CONDA,
        "docs/notes.txt": None,
        "workflows/ci.yml": None,
        "requirements/setup.py": FileKind.PYTHON,
    }
    for path, kind in expected.items():
        assert classify(Path(path)) is kind, path


def test_dockerfiles_by_their_common_names():
    for name in ("Dockerfile", "Dockerfile.gpu", "Dockerfile-gpu", "Dockerfile_cuda",
                 "Dockerfile-arm64", "cuda.Dockerfile", "train.dockerfile", "Containerfile"):
        assert classify(Path("docker") / name) is FileKind.DOCKERFILE, name
    for name in ("Dockerfiles", "dockerfile_notes.md", "Dockerfile_test.py", "Dockerfilegpu"):
        assert classify(Path(name)) is not FileKind.DOCKERFILE, name


# A video-segmentation project's environment, named for the project (issue 41).
CONDA_ENV = b"""# conda env create -f vidseg_env.yml
name: vidseg
channels:
  - pytorch
  - nvidia
dependencies:
  - python=3.8
  - cudatoolkit=11.1
  - pip:
      - opencv-python
"""


def test_conda_environments_by_their_content():
    assert is_conda_environment(CONDA_ENV)
    assert is_conda_environment(b"channels: [conda-forge]\ndependencies:\n  - numpy\n")
    # a Helm chart, a pubspec, an experiment config: keys conda does not know
    assert not is_conda_environment(b"apiVersion: v2\nname: web\ndependencies:\n  - redis\n")
    assert not is_conda_environment(b"name: app\nenvironment:\n  sdk: '>=3.0'\n"
                                    b"dependencies:\n  http: ^1.0\n")
    assert not is_conda_environment(b"model:\n  name: resnet\ndependencies:\n  - a\n")
    assert not is_conda_environment(b"name: env-only\n")  # no dependencies


def test_a_conda_file_named_otherwise_is_listed_and_checked(chdir_tmp: Path, capsys):
    from cudalint.cli import main

    for name in ("env.yml", "env.yaml", "vidseg_env.yml"):
        (chdir_tmp / name).write_bytes(CONDA_ENV)
    (chdir_tmp / "config.yaml").write_bytes(b"model:\n  name: resnet\nlr: 0.1\n")
    os.mkfifo(chdir_tmp / "pipe_env.yml")  # never opened for reading (it would block)
    assert main(["check", "--show-files", "."]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed == ["env.yaml\tconda", "env.yml\tconda", "vidseg_env.yml\tconda"]
    assert by_content(chdir_tmp / "config.yaml") is None
    assert main(["check", "--no-cache", "--output-format", "concise", "vidseg_env.yml"]) == 1
    out = capsys.readouterr().out
    assert "vidseg_env.yml:5:5: CUD401" in out and "vidseg_env.yml:8:5: CUD401" in out


def test_the_conda_environments_of_a_folder_are_those_a_check_reads(tmp_path: Path) -> None:
    """By name, else by content (as discovery classifies them): the torch floor and the
    report read the same files CUD401 does."""
    from cudalint.kinds import conda_environments

    files = {
        "environment.yml": "dependencies:\n  - numpy\n",  # by name, whatever its keys
        "conda_cpu.yaml": "name: x\n",
        "my_env.yml": "name: p\nchannels:\n  - conda-forge\ndependencies:\n  - pytorch\n",
        "docker-compose.yml": "name: p\nchannels: []\ndependencies: []\n",  # compose, by name
        "chart.yaml": "apiVersion: v2\ndependencies:\n  - name: redis\n",  # a Helm chart
        "notes.txt": "name: p\nchannels: []\ndependencies: []\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "environment.yml").write_text("dependencies: []\n")  # not at the root
    (tmp_path / "folder.yml").mkdir()  # not a file
    found = [path.name for path in conda_environments(tmp_path)]
    assert found == ["conda_cpu.yaml", "environment.yml", "my_env.yml"]
    kinds = {path.name: classify(path) or by_content(path) for path in tmp_path.iterdir()
             if path.is_file()}
    assert sorted(name for name, kind in kinds.items() if kind is FileKind.CONDA) == found

"""A file's kind from its name: the name patterns, matched without regular expressions,
answer as fnmatch tries each pattern in order (the first that matches)."""

from __future__ import annotations

import fnmatch
import itertools
from pathlib import Path

from cudalint.kinds import _NAME_PATTERNS, FileKind, classify


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

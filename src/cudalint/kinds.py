"""File kinds: which checker reads a file, decided from its name alone."""

from __future__ import annotations

import enum
from functools import cached_property

from cudalint.record import Record

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from pathlib import Path


class FileKind(str, enum.Enum):
    PYTHON = "python"
    NOTEBOOK = "notebook"
    REQUIREMENTS = "requirements"  # requirements*.txt, constraints*.txt
    CONDA = "conda"  # environment*.yml / .yaml, conda*.yml, any YAML holding an environment
    PYPROJECT = "pyproject"  # pyproject.toml
    SETUP_CFG = "setup-cfg"
    DOCKERFILE = "dockerfile"  # Dockerfile, Dockerfile[.-_]*, *.Dockerfile, Containerfile
    COMPOSE = "compose"  # docker-compose*.yml, compose*.yml
    SHELL = "shell"  # *.sh, *.bash, *.slurm, *.sbatch, *.pbs
    MAKEFILE = "makefile"
    CMAKE = "cmake"  # CMakeLists.txt, *.cmake
    CI = "ci"  # .github/workflows/*.yml, .github/actions/*/action.yml, .gitlab-ci.yml
    CUDA_SOURCE = "cuda-source"  # *.cu, *.cuh
    SHARED_LIBRARY = "shared-library"  # *.so, *.so.N


# The kinds formats/scripts.py reads commands from; a script rule also reads notebooks (the
# notebook checker passes their shell lines as SHELL). Here, so that a rule module names its
# kinds without importing the script parsers, which a check of Python files never needs.
SCRIPT_KINDS = frozenset({FileKind.SHELL, FileKind.MAKEFILE, FileKind.DOCKERFILE})
SCRIPT_RULE_KINDS = frozenset({*SCRIPT_KINDS, FileKind.NOTEBOOK})
# What the shell rules (CUD501-CUD504) read: the commands of CI `run:`/`script:` steps too
# (CUD404 reads the pins these install).
SHELL_RULE_KINDS = frozenset({*SCRIPT_RULE_KINDS, FileKind.CI})


# (kind, glob on the file name, `*` its only wildcard); the first match wins.
_NAME_PATTERNS: tuple[tuple[FileKind, str], ...] = (
    (FileKind.PYTHON, "*.py"),
    (FileKind.PYTHON, "*.pyi"),
    (FileKind.NOTEBOOK, "*.ipynb"),
    (FileKind.REQUIREMENTS, "requirements*.txt"),
    (FileKind.REQUIREMENTS, "requirements*.in"),
    (FileKind.REQUIREMENTS, "constraints*.txt"),
    (FileKind.CONDA, "environment*.yml"),
    (FileKind.CONDA, "environment*.yaml"),
    (FileKind.CONDA, "conda*.yml"),
    (FileKind.CONDA, "conda*.yaml"),
    (FileKind.PYPROJECT, "pyproject.toml"),
    (FileKind.SETUP_CFG, "setup.cfg"),
    (FileKind.DOCKERFILE, "Dockerfile"),
    (FileKind.DOCKERFILE, "Dockerfile.*"),
    (FileKind.DOCKERFILE, "Dockerfile-*"),  # Dockerfile-gpu, Dockerfile-arm64
    (FileKind.DOCKERFILE, "Dockerfile_*"),  # Dockerfile_cuda
    (FileKind.DOCKERFILE, "*.Dockerfile"),
    (FileKind.DOCKERFILE, "*.dockerfile"),
    (FileKind.DOCKERFILE, "Containerfile"),
    (FileKind.COMPOSE, "docker-compose*.yml"),
    (FileKind.COMPOSE, "docker-compose*.yaml"),
    (FileKind.COMPOSE, "compose*.yml"),
    (FileKind.COMPOSE, "compose*.yaml"),
    (FileKind.SHELL, "*.sh"),
    (FileKind.SHELL, "*.bash"),
    (FileKind.SHELL, "*.zsh"),
    (FileKind.SHELL, "*.slurm"),
    (FileKind.SHELL, "*.sbatch"),
    (FileKind.SHELL, "*.pbs"),
    (FileKind.MAKEFILE, "Makefile"),
    (FileKind.MAKEFILE, "makefile"),
    (FileKind.MAKEFILE, "GNUmakefile"),
    (FileKind.MAKEFILE, "*.mk"),
    (FileKind.CMAKE, "CMakeLists.txt"),
    (FileKind.CMAKE, "*.cmake"),
    (FileKind.CI, ".gitlab-ci.yml"),
    (FileKind.CUDA_SOURCE, "*.cu"),
    (FileKind.CUDA_SOURCE, "*.cuh"),
    (FileKind.SHARED_LIBRARY, "*.so"),
    (FileKind.SHARED_LIBRARY, "*.so.*"),
)


def classify(path: Path) -> FileKind | None:
    """The kind of a file from its name (and, for CI workflows and a `requirements/` folder,
    its folder)."""
    name = path.name
    if name.endswith((".yml", ".yaml", ".txt", ".in")):  # (the folder matters to these only)
        kind = _by_folder(name, path.parts)
        if kind is not None:
            return kind
    for kind, glob in _NAME_PARTS:
        if _matches(name, glob):
            return kind
    return None


# The top-level keys of a conda environment file (`conda env create -f`), whatever its name.
_CONDA_KEYS = frozenset({b"name", b"channels", b"dependencies", b"prefix", b"variables"})
_HEAD = 16 * 1024  # what is read of a YAML file no name pattern knows, to see what it is


def by_content(path: Path) -> FileKind | None:
    """The kind of a file no name pattern knows, from what it holds: a conda environment
    file named otherwise (`env.yml`, `<project>_env.yaml`). Reads the start of a `.yml`/
    `.yaml` file only (a regular file, never blocking)."""
    if not path.name.endswith((".yml", ".yaml")):
        return None
    from cudalint import files  # only for such a file

    try:
        head = files.read_head(path, _HEAD)
    except files.ReadError:
        return None
    return FileKind.CONDA if is_conda_environment(head) else None


def kind_of(path: Path) -> FileKind | None:
    """The kind of a file a check reads: from its name (`classify`), else from what it holds
    (`by_content`)."""
    return classify(path) or by_content(path)


def conda_environments(folder: Path) -> list[Path]:
    """The conda environment files directly in `folder`, sorted, as a check sees them: by name
    (`environment*.yml`, `conda*.yaml`), else by content (`env.yml`, `<project>_env.yaml`).
    What CUD401 reads at a project's root is what its torch floor and its report read."""
    return sorted(path for pattern in ("*.yml", "*.yaml") for path in folder.glob(pattern)
                  if kind_of(path) is FileKind.CONDA)


def is_conda_environment(head: bytes) -> bool:
    """Text whose top-level keys are all a conda environment's, `dependencies` and `channels`
    or `name` among them (not a Helm chart's `dependencies:`, a pubspec, a CI file)."""
    keys = set()
    for line in head.splitlines():
        if not line[:1].isalpha():
            continue  # indented, a comment, a list entry, `---`
        key, colon, _ = line.partition(b":")
        if not colon or key.strip() not in _CONDA_KEYS:
            return False
        keys.add(key.strip())
    return b"dependencies" in keys and (b"channels" in keys or b"name" in keys)


def _by_folder(name: str, parts: tuple[str, ...]) -> FileKind | None:
    if len(parts) >= 3 and parts[-3:-1] == (".github", "workflows") and name.endswith(
        (".yml", ".yaml")
    ):
        return FileKind.CI
    if name in ("action.yml", "action.yaml") and len(parts) >= 4 \
            and parts[-4:-2] == (".github", "actions"):
        return FileKind.CI  # a composite action: .github/actions/<name>/action.yml
    if len(parts) >= 2 and parts[-2] == "requirements" and name.endswith((".txt", ".in")):
        return FileKind.REQUIREMENTS  # requirements/base.txt, requirements/gpu.in
    return None


# Each glob split at its stars. (Matched so, not by regular expressions: compiling the
# globs as one costs a run more than matching every file of a large tree this way.)
_NAME_PARTS = tuple((kind, tuple(glob.split("*"))) for kind, glob in _NAME_PATTERNS)


def _matches(name: str, parts: tuple[str, ...]) -> bool:
    """Whether `name` matches the glob split into `parts` at its stars (as fnmatch does,
    with case)."""
    if len(parts) == 1:
        return name == parts[0]
    first, last = parts[0], parts[-1]
    if not (name.startswith(first) and name.endswith(last)):
        return False
    at, end = len(first), len(name) - len(last)
    for part in parts[1:-1]:  # each as early as it can be: what follows has the most room
        at = name.find(part, at, end)
        if at < 0:
            return False
        at += len(part)
    return at <= end


class SourceFile(Record):
    """A file's bytes, and its text where it is text. `text` is None for binary kinds."""

    FIELDS = ("path", "kind", "data", "text")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, path: Path, kind: FileKind, data: bytes, text: str | None) -> None:
        self.path = path
        self.kind = kind
        self.data = data
        self.text = text

    @cached_property
    def lines(self) -> list[str]:
        """The text's lines without their line endings; `line(row)` is 1-based."""
        return (self.text or "").splitlines()

    def line(self, row: int) -> str:
        if 1 <= row <= len(self.lines):
            return self.lines[row - 1]
        return ""

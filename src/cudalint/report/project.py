"""What the report says about the project itself: its name, commit and date, the files its
dependencies are declared in, and the smoke targets it already has.

The name, commit and dirtiness come from the smoke harness's identity module, so that a smoke
run and the report name a project the same way.
"""

from __future__ import annotations

import ast
import datetime
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudalint import __version__
from cudalint.kinds import conda_environments
from cudalint.report.paths import read_source
from cudalint.runtime.smoke import identity

# Files that declare what a project installs; a pyproject.toml, setup.py or setup.cfg counts
# only when it declares dependencies.
# (The conda environment files are those a check finds: kinds.conda_environments.)
_DEPENDENCY_GLOBS = ("requirements*.txt", "requirements/*.txt", "requirements/*.in",
                     "requirements*.in", "Pipfile", "poetry.lock", "uv.lock", "Dockerfile*",
                     "docker/Dockerfile*")
_DECLARES = {
    "pyproject.toml": re.compile(r"(?m)^\s*(?:dependencies\s*=|\[tool\.poetry\.dependencies\]"
                                 r"|\[project\.optional-dependencies\])"),
    "setup.py": re.compile(r"\binstall_requires\s*="),
    "setup.cfg": re.compile(r"(?m)^\s*install_requires\s*="),
}
_SMOKE_FILES = ("smoke_target*.py", "smoke_*.py", "*_smoke.py", "tests/smoke_*.py",
                "smoke/*.py")
_SKIPPED = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".cudalint_cache"})


@dataclass(frozen=True)
class Project:
    name: str
    root: str
    commit: str | None
    dirty: bool | None
    date: str  # the report's date, UTC
    version: str = __version__
    dependency_files: tuple[str, ...] = ()
    smoke_targets: tuple[str, ...] = ()  # file:function, relative to the root
    resumable_targets: tuple[str, ...] = ()  # those that take `steps` and `resume` (--interrupt)
    references: tuple[str, ...] = ()  # saved smoke references (*.safetensors) in the project
    known: bool = True  # False: no project was looked at (the dependency files are unknown)

    @property
    def commit_text(self) -> str:
        if self.commit is None:
            return "no git commit"
        return self.commit[:12] + (" (uncommitted changes)" if self.dirty else "")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "root": self.root, "commit": self.commit, "dirty": self.dirty,
                "date": self.date, "cudalint": self.version,
                "dependency_files": list(self.dependency_files),
                "smoke_targets": list(self.smoke_targets),
                "resumable_targets": list(self.resumable_targets),
                "references": list(self.references)}


def today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def unknown_project() -> Project:
    return Project("the project", ".", None, None, today(), known=False)


def describe(root: Path) -> Project:
    state = identity.project_state(root)
    targets = smoke_targets(root)
    return Project(state["name"], state["root"], state["commit"], state["dirty"], today(),
                   dependency_files=dependency_files(root),
                   smoke_targets=tuple(targets),
                   resumable_targets=tuple(t for t, names in targets.items()
                                           if {"steps", "resume"} <= names),
                   references=references(root))


def dependency_files(root: Path) -> tuple[str, ...]:
    found = {path for pattern in _DEPENDENCY_GLOBS for path in root.glob(pattern)
             if path.is_file()}
    found.update(conda_environments(root))
    for name, declares in _DECLARES.items():
        path = root / name
        if path.is_file() and declares.search(read_source(path)):
            found.add(path)
    return tuple(sorted(path.relative_to(root).as_posix() for path in found))


def smoke_targets(root: Path) -> dict[str, set[str]]:
    """`file:function` for each public function that takes a `device` first, in the project's
    smoke files, with its parameters' names."""
    targets: dict[str, set[str]] = {}
    files = sorted({path for pattern in _SMOKE_FILES for path in root.glob(pattern)
                    if path.is_file() and not _SKIPPED & set(path.parts)})
    for path in files:
        try:
            tree = ast.parse(read_source(path))
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if (isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
                    and node.args.args and node.args.args[0].arg == "device"):
                names = {arg.arg for arg in [*node.args.args, *node.args.kwonlyargs]}
                targets[f"{path.relative_to(root).as_posix()}:{node.name}"] = names
    return targets


def references(root: Path) -> tuple[str, ...]:
    return tuple(sorted(path.relative_to(root).as_posix() for path in root.rglob("*.safetensors")
                        if not _SKIPPED & set(path.relative_to(root).parts)))



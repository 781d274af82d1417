"""The oldest torch a project says it supports, read from its own files, never from the
environment: requirements*.txt, pyproject.toml (PEP 621 dependencies and extras, poetry),
setup.py / setup.cfg (install_requires, extras_require) and conda environment files
(`environment*.yml`, or any YAML file that holds an environment: `env.yml`; conda's list and its
`pip:` list). Each torch requirement's lower bound (`>=1.8`, `==2.3.1`, `~=2.1`,
`pytorch=1.7`) is read; the project's floor is the lowest of them, stated in the first file
(in that order) that states it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from cudalint.data import load_toml
from cudalint.engine.reading.reader import read_text
from cudalint.kinds import conda_environments

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from typing import Any

    from packaging.requirements import Requirement

    from cudalint.engine.settings import SetupFacts

_TORCH = frozenset({"torch", "pytorch"})
_LOWER_BOUND_OPS = frozenset({">=", "==", "~=", ">", "==="})
# A conda match spec: `pytorch=1.7`, `pytorch>=1.8,<2`, `pytorch 2.1.*`,
# `pytorch::pytorch=2.1=*cuda*`. (Patterns compiled on their first use, by re's cache: most
# projects have neither a conda environment nor poetry, and every run reads the floor.)
_CONDA = r"^\s*(?:[\w.-]+::)?([A-Za-z0-9_.-]+)\s*(.*)$"
_CONDA_CLAUSE = r"^\s*(>=|==|=|~=|>)?\s*(\d+)(?:\.(\d+))?"
_POETRY = r"^\s*(\^|~|>=|==|>|~=)?\s*(\d+)(?:\.(\d+))?"

Floor = tuple[int, int]

# A torch named with a version in a README: `PyTorch 1.7`, `pytorch>=1.8.0`, `torch==1.10`,
# `PyTorch version 1.4`, `PyTorch (>= 1.6)`; not `torchvision 0.8`, `pytorch-lightning 1.5`.
_NAMED = (r"(?i)(?<![\w.-])(?:py)?torch(?![\w.-])[ \t:=<>~^(\[]*(?:version[ \t]*)?v?"
          r"(\d+)\.(\d+)")
# The newest torch that code using an API removed in torch 2.0 (`torch._six`) can run on.
OLD_TORCH = (1, 13)
OLD_TORCH_SIGNAL = b"torch._six"


def torch_floor(root: Path, setup: SetupFacts) -> Floor | None:
    """The lowest torch version the project's files allow, or None when they say nothing."""
    found = torch_floor_source(root, setup)
    return None if found is None else found[0]


def torch_floor_source(root: Path, setup: SetupFacts) -> tuple[Floor, str] | None:
    """`torch_floor`, and the file that states it (its path from `root`: `requirements.txt`,
    `setup.py`...), or None when the project's files say nothing."""
    bounds = [
        *((floor, name) for name, specs in _requirements_by_file(root)
          for floor in _from_pip_specs(specs)),
        *((floor, "pyproject.toml") for floor in _from_pyproject(root / "pyproject.toml")),
        *((floor, "setup.py") for floor in _from_pip_specs(setup.requires)),
        *((floor, "setup.cfg") for floor in _from_pip_specs(_setup_cfg(root / "setup.cfg"))),
        *_from_environments(root),
    ]
    return min(bounds, key=_floor_of) if bounds else None  # the first of the lowest


def documented_floor(root: Path) -> Floor | None:
    """The oldest torch the project's README names with a version (`PyTorch 1.7`), or None.
    A README is not a requirement: it lowers the torch the fixes assume, never raises it."""
    found = documented_floor_source(root)
    return None if found is None else found[0]


def documented_floor_source(root: Path) -> tuple[Floor, str] | None:
    """`documented_floor`, and the README that names it (`README.md`), or None."""
    named = [((int(m.group(1)), int(m.group(2))), path.name)
             for path in sorted(root.glob("README*")) if (text := read_text(path)) is not None
             for m in re.finditer(_NAMED, text)]
    return min(named, key=_floor_of) if named else None


def _floor_of(sourced: tuple[Floor, str]) -> Floor:
    return sourced[0]


def declares(root: Path, setup: SetupFacts, name: str) -> bool:
    """Whether the project's requirements, pyproject (PEP 621 or poetry), setup.py or
    setup.cfg name the distribution `name` as a dependency."""
    specs = [*_requirements_files(root), *setup.requires, *_setup_cfg(root / "setup.cfg")]
    document = _pyproject(root / "pyproject.toml")
    project = _table(document.get("project"))
    specs += _strings(project.get("dependencies"))
    for extra in _table(project.get("optional-dependencies")).values():
        specs += _strings(extra)
    if any(name in (k.lower() for k in table) for table in _poetry_tables(document)):
        return True
    return any((parsed := _requirement(spec, name)) is not None and parsed.name.lower() == name
               for spec in specs)


def _requirement(spec: str, name: str) -> Requirement | None:
    """The requirement `spec` when it may name `name` (which it holds, in any case): the
    others are not parsed, so that packaging is imported only for a project whose
    requirements name it (every run replays the project's settings)."""
    if name not in spec.lower():
        return None
    from cudalint.formats.requirements import requirement

    return requirement(spec)


def _requirements_files(root: Path) -> Iterator[str]:
    for _name, specs in _requirements_by_file(root):
        yield from specs


def _requirements_by_file(root: Path) -> Iterator[tuple[str, list[str]]]:
    """Each requirements file's path from `root`, and its requirements."""
    paths = [*root.glob("requirements*.txt"), *root.glob("requirements/*.txt")]
    for path in sorted(paths):
        text = read_text(path)
        if text is not None:
            from cudalint.formats.requirements import read_lines

            yield (path.relative_to(root).as_posix(),
                   [line.text for line in read_lines(text.splitlines()) if not line.option])


def _from_pip_specs(specs: Iterable[str]) -> Iterator[Floor]:
    for spec in specs:
        parsed = _requirement(spec, "torch")  # and pytorch
        if parsed is None or parsed.name.lower() not in _TORCH:
            continue
        lower = [_version(s.version) for s in parsed.specifier if s.operator in _LOWER_BOUND_OPS]
        known = [v for v in lower if v is not None]
        if known:
            yield max(known)


def _version(text: str) -> Floor | None:
    from packaging.version import InvalidVersion, Version

    try:
        release = Version(text.replace(".*", "")).release
    except InvalidVersion:
        return None
    return (release[0], release[1] if len(release) > 1 else 0)


def _pyproject(path: Path) -> dict[str, Any]:
    text = read_text(path)
    if text is None:
        return {}
    try:
        return load_toml(text)
    except (ValueError, RecursionError):  # TOMLDecodeError is a ValueError
        return {}


def _poetry_tables(document: dict[str, Any]) -> list[dict[str, Any]]:
    poetry = _table(_table(document.get("tool")).get("poetry"))
    tables = [_table(poetry.get("dependencies"))]
    return tables + [_table(_table(g).get("dependencies"))
                     for g in _table(poetry.get("group")).values()]


def _from_pyproject(path: Path) -> Iterator[Floor]:
    document = _pyproject(path)
    project = _table(document.get("project"))
    yield from _from_pip_specs(_strings(project.get("dependencies")))
    for extra in _table(project.get("optional-dependencies")).values():
        yield from _from_pip_specs(_strings(extra))
    for table in _poetry_tables(document):
        for name, value in table.items():
            if name.lower() in _TORCH:
                version = value.get("version") if isinstance(value, dict) else value
                if isinstance(version, str) and (floor := _poetry_floor(version)):
                    yield floor


def _poetry_floor(constraint: str) -> Floor | None:
    floors = [m for clause in constraint.split(",") if (m := re.match(_POETRY, clause))]
    if not floors:
        return None
    return max((int(m.group(2)), int(m.group(3) or 0)) for m in floors)


def _table(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _setup_cfg(path: Path) -> Iterator[str]:
    text = read_text(path)
    if text is None:
        return
    import configparser  # only for a project with a setup.cfg

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return
    sections = [("options", "install_requires")]
    if parser.has_section("options.extras_require"):
        sections += [("options.extras_require", key)
                     for key in parser.options("options.extras_require")]
    for section, key in sections:
        if parser.has_option(section, key):
            yield from (line.strip() for line in parser.get(section, key).splitlines()
                        if line.strip())


def _from_environments(root: Path) -> Iterator[tuple[Floor, str]]:
    """Each torch lower bound of the conda environment files, with the file's name."""
    for path in conda_environments(root):
        text = read_text(path)
        if text is None:
            continue
        import yaml  # only for a project with an environment file

        try:
            document = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError, ValueError):
            continue
        dependencies = _table(document).get("dependencies")
        for entry in dependencies if isinstance(dependencies, list) else ():
            if isinstance(entry, str) and (floor := _conda_floor(entry)):
                yield floor, path.name
            elif isinstance(entry, dict):
                yield from ((f, path.name) for f in _from_pip_specs(_strings(entry.get("pip"))))


def _conda_floor(spec: str) -> Floor | None:
    match = re.match(_CONDA, spec)
    if match is None or match.group(1).lower() not in _TORCH:
        return None
    version = match.group(2).split("=", 2) if match.group(2).startswith("=") \
        and not match.group(2).startswith("==") else None
    clauses = [version[1]] if version else match.group(2).split(",")
    floors = [(int(m.group(2)), int(m.group(3) or 0)) for clause in clauses
              if (m := re.match(_CONDA_CLAUSE, clause))]
    return max(floors) if floors else None

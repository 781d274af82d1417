"""Where CUD402 looks in pyproject.toml and setup.cfg: every dependency list and index."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.markers import InvalidMarker, Marker

from cudalint.formats import FormatError, toml_lines
from cudalint.formats.requirements import excluded_on_macos
from cudalint.rules.cud4_pins.cuda_pins import (
    Problem,
    index_problem,
    is_cuda_extra,
    package_problem,
    requirement_problem,
    url_problem,
)

_SETUP_CFG_KEYS = {("options", "install_requires"), ("options", "setup_requires")}


@dataclass(frozen=True)
class Located:
    row: int
    column: int
    problem: Problem
    guarded: bool = False  # an optional extra or dependency group


def pyproject(text: str) -> Iterator[Located | FormatError]:
    document = toml_lines.load(text)
    if isinstance(document, FormatError):
        yield document
        return
    locate = toml_lines.Locator(text.splitlines())
    project = _table(document.get("project"))
    yield from _requirements(locate, project.get("dependencies"), "project")
    for deps in _table(project.get("optional-dependencies")).values():
        yield from _requirements(locate, deps, "project.optional-dependencies", guarded=True)
    for deps in _table(document.get("dependency-groups")).values():
        yield from _requirements(locate, deps, "dependency-groups", guarded=True)
    yield from _requirements(locate, _table(document.get("build-system")).get("requires"),
                             "build-system")
    tool = _table(document.get("tool"))
    yield from _uv(locate, _table(tool.get("uv")))
    yield from _poetry(locate, _table(tool.get("poetry")))


def _table(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _tables(value: object) -> list[Mapping[str, Any]]:
    """An array of tables (`[[tool.uv.index]]`), its non-table items dropped."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) \
        else []


def _strings(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _requirements(locate: toml_lines.Locator, value: object, table: str, *,
                  guarded: bool = False) -> Iterator[Located]:
    for text in _strings(value):
        problem = requirement_problem(text)
        if problem is not None:
            yield Located(*locate.string(text, table), problem, guarded)


def _uv(locate: toml_lines.Locator, uv: Mapping[str, Any]) -> Iterator[Located]:
    cuda_indexes = set()
    for index in _tables(uv.get("index")):
        url = index.get("url")
        if not isinstance(url, str):
            continue
        option = "--index-url" if index.get("default") is True else "--extra-index-url"
        problem = index_problem(option, url)
        if problem is not None:
            cuda_indexes.add(index.get("name"))
            yield Located(*locate.string(url, "tool.uv.index"), problem)
    yield from _requirements(locate, uv.get("dev-dependencies"), "tool.uv", guarded=True)
    for package, sources in _table(uv.get("sources")).items():
        for source in sources if isinstance(sources, list) else [sources]:
            source = _table(source)
            problem = None
            if source.get("index") in cuda_indexes:
                problem = Problem(f"`{package}` comes from the CUDA index "
                                  f"`{source['index']}`: no macOS wheels there; give the "
                                  f"source a marker such as `sys_platform == 'linux'`")
            elif isinstance(source.get("url"), str):
                problem = url_problem(source["url"])
            if problem is not None:
                guarded = _excluded(source.get("marker"))
                yield Located(*locate.key(package, "tool.uv.sources"), problem, guarded)


def _poetry(locate: toml_lines.Locator, poetry: Mapping[str, Any]) -> Iterator[Located]:
    cuda_sources = set()
    for source in _tables(poetry.get("source")):
        url = source.get("url")
        if not isinstance(url, str):
            continue
        primary = source.get("priority") in ("primary", "default")
        problem = index_problem("--index-url" if primary else "--extra-index-url", url)
        if problem is not None:
            cuda_sources.add(source.get("name"))
            yield Located(*locate.string(url, "tool.poetry.source"), problem)
    tables = [("tool.poetry.dependencies", poetry.get("dependencies"), False)]
    for name, group in _table(poetry.get("group")).items():
        tables.append((f"tool.poetry.group.{name}.dependencies", _table(group).get(
            "dependencies"), True))
    for table, dependencies, optional in tables:
        for package, spec in _table(dependencies).items():
            problem, guarded = _poetry_dependency(package, spec, cuda_sources)
            if problem is not None:
                yield Located(*locate.key(package, table), problem, guarded or optional)


def _poetry_dependency(package: str, spec: object, cuda_sources: set[object],
                       ) -> tuple[Problem | None, bool]:
    if package == "python":
        return None, False
    if isinstance(spec, str):
        return package_problem(package, spec), False
    spec = _table(spec)
    version = spec.get("version")
    problem = package_problem(package, version if isinstance(version, str) else "")
    if problem is None and spec.get("source") in cuda_sources:
        problem = Problem(f"`{package}` comes from the CUDA source `{spec['source']}`: no "
                          "macOS wheels there; add `markers = \"sys_platform == 'linux'\"`")
    if problem is None and isinstance(spec.get("url"), str):
        problem = url_problem(spec["url"])
    extras = [e for e in _strings(spec.get("extras")) if is_cuda_extra(e)]
    if problem is None and extras:
        problem = Problem(f"`{package}` with the `{extras[0]}` extra pulls NVIDIA CUDA wheels, "
                          "which macOS does not have")
    guarded = spec.get("platform") in ("linux", "win32") or _excluded(spec.get("markers"))
    return problem, bool(spec.get("optional")) or guarded


def _excluded(marker: object) -> bool:
    if not isinstance(marker, str):
        return False
    try:
        return excluded_on_macos(Marker(marker))
    except InvalidMarker:
        return False


def setup_cfg(text: str) -> Iterator[Located]:
    """`install_requires`, `setup_requires` and `[options.extras_require]` in setup.cfg."""
    for section, key, row, column, value in _ini_values(text.splitlines()):
        extras = section == "options.extras_require"
        if not extras and (section, key) not in _SETUP_CFG_KEYS:
            continue
        problem = requirement_problem(value)
        if problem is not None:
            yield Located(row, column, problem, extras)


def _ini_values(lines: Iterable[str]) -> Iterator[tuple[str, str, int, int, str]]:
    """(section, key, row, column, value line) for each value line, continuations included."""
    section = key = ""
    for row, line in enumerate(lines, start=1):
        stripped = re.sub(r"\s+[#;].*$", "", line).strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            section, key = stripped[1:-1].strip(), ""
            continue
        if line[:1] in (" ", "\t") and key:
            yield section, key, row, line.index(stripped) + 1, stripped
            continue
        match = re.match(r"([^=:]+)[=:](.*)", stripped)
        key = match.group(1).strip() if match else ""
        value = match.group(2).strip() if match else ""
        if match and value:
            yield section, key, row, line.index(value, len(match.group(1))) + 1, value

"""Which files a run checks: directories recursively, minus excludes and .gitignore."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pathspec

from cudalint.config import Config, project_root
from cudalint.kinds import FileKind, classify


class MissingPathError(Exception):
    """A path given on the command line does not exist (exit 2)."""


def discover(
    paths: Sequence[Path], config: Config, *, force_exclude: bool = False
) -> list[tuple[Path, FileKind]]:
    """Files to check with their kinds, sorted. A file named explicitly is checked even when
    an exclude pattern matches it, unless `force_exclude` (as ruff's --force-exclude, which
    pre-commit hooks use since they pass every file explicitly)."""
    excluded_kinds = {kind.lower() for kind in config.exclude_kinds}
    exclude = _exclude_spec(config)
    found: dict[Path, FileKind] = {}
    for path in paths:
        if not path.exists():
            raise MissingPathError(f"{path}: no such file or directory")
        if path.is_file():
            kind = classify(path) or _explicit_kind(path)
            if kind is not None and kind.value not in excluded_kinds and not (
                force_exclude and _force_excluded(path, config, exclude)
            ):
                found[path] = kind
            continue
        for file in _walk(path.resolve(), config, exclude):
            kind = classify(file)
            if kind is not None and kind.value not in excluded_kinds:
                found[file] = kind
    return sorted(found.items())


def is_excluded(path: Path, kind: FileKind, config: Config) -> bool:
    """Whether --force-exclude skips `path`, which need not exist (standard input's name)."""
    if kind.value in {k.lower() for k in config.exclude_kinds}:
        return True
    return _force_excluded(path, config, _exclude_spec(config))


def _force_excluded(path: Path, config: Config, exclude: pathspec.PathSpec) -> bool:
    """A file named explicitly, matched from the project root (without a configuration, the
    nearest pyproject.toml or git root): `dist/gen.py` is excluded by `dist` from anywhere."""
    full = path.resolve()
    from_root = _relative(full, project_root(config))
    return exclude.match_file(from_root) or _skipped(full, False, config, exclude, [])


def _exclude_spec(config: Config) -> pathspec.PathSpec:
    return pathspec.GitIgnoreSpec.from_lines([*config.exclude, *config.extend_exclude])


def _explicit_kind(path: Path) -> FileKind | None:
    """A file named on the command line that no name pattern knows: a Python or shell script
    by its shebang, a `.py`-like name as Python, anything else (README.md) skipped."""
    if path.suffix in (".py", ".pyw"):
        return FileKind.PYTHON
    if path.suffix:
        return None
    try:
        with path.open("rb") as file:
            first = file.readline(200)
    except OSError:
        return FileKind.PYTHON  # reported as unreadable when checked
    if first.startswith(b"#!") and b"python" in first:
        return FileKind.PYTHON
    if first.startswith(b"#!") and (b"sh" in first):
        return FileKind.SHELL
    return None


def _walk(top: Path, config: Config, exclude: pathspec.PathSpec) -> Iterator[Path]:
    ignores: list[tuple[Path, pathspec.PathSpec]] = []
    for folder, dirs, files in os.walk(top):
        here = Path(folder)
        if config.respect_gitignore:
            ignores = [(base, spec) for base, spec in ignores if _is_within(here, base)]
            spec = _gitignore(here)
            if spec is not None:
                ignores.append((here, spec))
        dirs[:] = sorted(
            d for d in dirs if not _skipped(here / d, True, config, exclude, ignores)
        )
        for name in sorted(files):
            file = here / name
            if not _skipped(file, False, config, exclude, ignores):
                yield file


def _skipped(
    path: Path,
    is_dir: bool,
    config: Config,
    exclude: pathspec.PathSpec,
    ignores: list[tuple[Path, pathspec.PathSpec]],
) -> bool:
    suffix = "/" if is_dir else ""
    if exclude.match_file(_relative(path, config.root) + suffix) or exclude.match_file(
        path.name + suffix
    ):
        return True
    return any(spec.match_file(_relative(path, base) + suffix) for base, spec in ignores)


def _gitignore(folder: Path) -> pathspec.PathSpec | None:
    file = folder / ".gitignore"
    if not file.is_file():
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(file.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        return None


def _relative(path: Path, base: Path) -> str:
    """`path` relative to `base` (both absolute), or the path itself when outside it."""
    text, prefix = str(path), str(base) + os.sep
    return text[len(prefix) :].replace(os.sep, "/") if text.startswith(prefix) else path.as_posix()


def _is_within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents

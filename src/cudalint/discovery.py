"""Which files a run checks: directories recursively, minus excludes and .gitignore.

A symbolic link to a file stands for that file when it lies inside the tree checked (the folder
given, or the project for a file named explicitly), so that a fix writes the file itself, never
through a link; a link out of the tree is not followed (os.walk follows no linked folder
either). A folder that cannot be read is an error line of its own."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from cudalint.config import Config, project_root
from cudalint.engine.reader import read_text
from cudalint.kinds import FileKind, classify


class MissingPathError(Exception):
    """A path given on the command line does not exist (exit 2)."""


def discover(
    paths: Sequence[Path],
    config: Config,
    *,
    force_exclude: bool = False,
    errors: list[tuple[Path, str]] | None = None,
) -> list[tuple[Path, FileKind]]:
    """Files to check with their kinds, sorted. A file named explicitly is checked even when
    an exclude pattern matches it, unless `force_exclude` (as ruff's --force-exclude, which
    pre-commit hooks use since they pass every file explicitly). What cannot be walked is
    added to `errors` with the reason."""
    errors = [] if errors is None else errors
    excluded_kinds = {kind.lower() for kind in config.exclude_kinds}
    exclude = _exclude_spec(config)
    found: dict[Path, FileKind] = {}
    for path in paths:
        if not path.exists():
            raise MissingPathError(f"{path}: no such file or directory")
        if path.is_dir():
            for file in _walk(path.resolve(), config, exclude, errors):
                kind = classify(file)
                if kind is not None and kind.value not in excluded_kinds:
                    found[file] = kind
            continue
        named = _named_file(path, config.root, errors)
        kind = None if named is None else classify(named) or _explicit_kind(named)
        if named is None or kind is None or kind.value in excluded_kinds:
            continue
        if not (force_exclude and _force_excluded(named, config, exclude)):
            found[named] = kind
    return sorted(found.items())


def _named_file(path: Path, root: Path, errors: list[tuple[Path, str]]) -> Path | None:
    """A path named on the command line that is not a folder: the file to check, or None
    with the reason in `errors`."""
    if not path.is_file():
        errors.append((path, "not a regular file or folder; skipped"))
        return None
    target = _followed(path, root)
    if target is None:
        errors.append((path, "a symbolic link to a file outside the project; skipped"))
        return None
    return target


def is_excluded(path: Path, kind: FileKind, config: Config) -> bool:
    """Whether --force-exclude skips `path`, which need not exist (standard input's name)."""
    if kind.value in {k.lower() for k in config.exclude_kinds}:
        return True
    return _force_excluded(path, config, _exclude_spec(config))


class Spec(Protocol):
    def match_file(self, file: str) -> bool: ...


class _Names:
    """Gitignore patterns that are all plain names (`.venv`, `dist`): each matches a file or
    folder of that name at any depth, and what lies below it. pathspec gives the same answers;
    this spares a run its import (the default excludes are such names)."""

    PLAIN = re.compile(r"[\w.+-]+")

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)

    def match_file(self, file: str) -> bool:
        return any(part in self.names for part in file.split("/"))


def _spec(lines: list[str]) -> Spec:
    """A gitignore spec of these lines; pathspec is imported only for real patterns."""
    patterns = [line for line in lines if line.strip() and not line.startswith("#")]
    if all(_Names.PLAIN.fullmatch(line) for line in patterns):
        return _Names(patterns)
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _force_excluded(path: Path, config: Config, exclude: Spec) -> bool:
    """A file named explicitly, matched from the project root (without a configuration, the
    nearest pyproject.toml or git root): `dist/gen.py` is excluded by `dist` from anywhere."""
    full = path.resolve()
    from_root = _relative(full, project_root(config))
    return exclude.match_file(from_root) or _skipped(full, False, config, exclude, [])


def _exclude_spec(config: Config) -> Spec:
    return _spec([*config.exclude, *config.extend_exclude])


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


def _walk(
    top: Path, config: Config, exclude: Spec, errors: list[tuple[Path, str]]
) -> Iterator[Path]:
    ignores: list[tuple[Path, Spec]] = []

    def unreadable(error: OSError) -> None:
        folder = Path(error.filename or top)
        errors.append((folder, f"cannot read the folder: {error.strerror}; skipped"))

    for folder, dirs, files in os.walk(top, onerror=unreadable):
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
            if _skipped(file, False, config, exclude, ignores):
                continue
            target = _followed(file, top)
            if target is not None:
                yield target


def _skipped(
    path: Path,
    is_dir: bool,
    config: Config,
    exclude: Spec,
    ignores: list[tuple[Path, Spec]],
) -> bool:
    suffix = "/" if is_dir else ""
    if exclude.match_file(_relative(path, config.root) + suffix) or exclude.match_file(
        path.name + suffix
    ):
        return True
    return any(spec.match_file(_relative(path, base) + suffix) for base, spec in ignores)


def _gitignore(folder: Path) -> Spec | None:
    text = read_text(folder / ".gitignore")
    return None if text is None else _spec(text.splitlines())


def _relative(path: Path, base: Path) -> str:
    """`path` relative to `base` (both absolute), or the path itself when outside it."""
    text, prefix = str(path), str(base) + os.sep
    return text[len(prefix) :].replace(os.sep, "/") if text.startswith(prefix) else path.as_posix()


def _followed(file: Path, top: Path) -> Path | None:
    """The file, or the file a symbolic link names when it lies inside `top`; else None.
    A link that leads nowhere stays itself, to be reported as unreadable."""
    try:
        if not file.is_symlink():
            return file
        target = file.resolve(strict=True)
    except (OSError, RuntimeError):  # a dangling link, a loop of links, an unreadable folder
        return file
    return target if _is_within(target, top) else None


def _is_within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents

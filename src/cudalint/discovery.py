"""Which files a run checks: directories recursively, minus excludes and .gitignore.

As in ruff (and ripgrep's ignore crate, which ruff walks with), a file or folder named on the
command line is checked even when an exclude pattern or a .gitignore matches it or one of its
folders, unless --force-exclude; below a named folder, each entry found is matched itself: a
pattern without a slash by the entry's name, one with a slash by its path from the project
root (`.gitignore` patterns from the .gitignore's folder), and an excluded folder is not
entered. The .gitignore files of the folders between the project root and a named folder
apply below it too.

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
    """Files to check with their kinds, sorted. A file or folder named explicitly is checked
    even when an exclude pattern matches it or a folder above it, unless `force_exclude` (as
    ruff's --force-exclude, which pre-commit hooks use since they pass every file
    explicitly). What cannot be walked is added to `errors` with the reason."""
    errors = [] if errors is None else errors
    excluded_kinds = {kind.lower() for kind in config.exclude_kinds}
    exclude = _exclude_spec(config)
    root = project_root(config)
    found: dict[Path, FileKind] = {}
    for path in paths:
        if not path.exists():
            raise MissingPathError(f"{path}: no such file or directory")
        if force_exclude and _covered(path.resolve(), path.is_dir(), root, exclude):
            continue
        if path.is_dir():
            for file in _walk(path.resolve(), root, config, exclude, errors):
                kind = classify(file)
                if kind is not None and kind.value not in excluded_kinds:
                    found[file] = kind
            continue
        named = _named_file(path, root, errors)
        kind = None if named is None else classify(named) or _explicit_kind(named)
        if named is not None and kind is not None and kind.value not in excluded_kinds:
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
    return _covered(path.resolve(), False, project_root(config), _exclude_spec(config))


class Spec(Protocol):
    def covers(self, path: str) -> bool:
        """Whether a pattern matches `path` (a folder's ends with "/") or a folder above it:
        what --force-exclude asks of a path named explicitly."""

    def matches(self, path: str) -> bool:
        """Whether a pattern matches `path` itself, not through a folder above it: what a walk
        asks of each entry, having entered no excluded folder below the one named."""


class _Names:
    """Gitignore patterns that are all plain names (`.venv`, `dist`): each matches a file or
    folder of that name at any depth, and what lies below it. pathspec gives the same answers;
    this spares a run its import (the default excludes are such names)."""

    PLAIN = re.compile(r"[\w.+-]+")

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)

    def covers(self, path: str) -> bool:
        return any(part in self.names for part in path.split("/"))

    def matches(self, path: str) -> bool:
        return path.rstrip("/").rpartition("/")[2] in self.names


class _Patterns:
    """Real gitignore patterns, through pathspec; the last pattern that matches decides."""

    def __init__(self, lines: list[str]) -> None:
        import pathspec

        self.spec = pathspec.GitIgnoreSpec.from_lines(lines)
        self.patterns = [(p.regex, bool(p.include)) for p in self.spec.patterns
                         if p.include is not None and p.regex is not None]
        # One regex that any of them matches (their groups unnamed, to join them): most
        # entries of a walk match none, and one match call rules them out.
        self.any = re.compile("|".join(
            f"(?:{_GROUP_NAME.sub('(?:', regex.pattern)})" for regex, _ in self.patterns
        ) or "(?!)")

    def covers(self, path: str) -> bool:
        return bool(self.spec.match_file(path))

    def matches(self, path: str) -> bool:
        if self.any.match(path) is None:
            return False
        decided = False
        for regex, include in self.patterns:
            if _matches_itself(regex, path):
                decided = include
        return decided


_GROUP_NAME = re.compile(r"\(\?P<\w+>")


def _matches_itself(regex: re.Pattern[str], path: str) -> bool:
    """pathspec's pattern regexes also match what lies below a matched folder: the text after
    the folder's slash (the `ps_d` group); such a match is not of `path` itself, unless the
    slash ends it (a folder, given with its trailing slash)."""
    match = regex.match(path)
    if match is None:
        return False
    if "ps_d" not in regex.groupindex or match.start("ps_d") < 0:
        return True
    return match.end("ps_d") == len(path)


def _spec(lines: list[str]) -> Spec:
    """A gitignore spec of these lines; pathspec is imported only for real patterns."""
    patterns = [line for line in lines if line.strip() and not line.startswith("#")]
    if all(_Names.PLAIN.fullmatch(line) for line in patterns):
        return _Names(patterns)
    return _Patterns(lines)


def _covered(path: Path, is_dir: bool, root: Path, exclude: Spec) -> bool:
    """A path named explicitly (absolute), matched with the folders above it up to the project
    root (without a configuration, the nearest pyproject.toml or git root): `dist/gen.py` is
    excluded by `dist` from anywhere. The project root itself is never excluded, whatever the
    names of its folders."""
    if path == root:
        return False
    return exclude.covers(_relative(path, root) + ("/" if is_dir else ""))


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


Ignores = list[tuple[Path, Spec]]


def _walk(
    top: Path, root: Path, config: Config, exclude: Spec, errors: list[tuple[Path, str]]
) -> Iterator[Path]:
    ignores = _gitignores_above(top, root) if config.respect_gitignore else []

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
        dirs[:] = sorted(d for d in dirs if not _skipped(here / d, True, root, exclude, ignores))
        for name in sorted(files):
            file = here / name
            if _skipped(file, False, root, exclude, ignores):
                continue
            target = _followed(file, top)
            if target is not None:
                yield target


def _gitignores_above(top: Path, root: Path) -> Ignores:
    """The .gitignore files of the folders from the project root down to the folder above
    `top` (ripgrep and ruff read those of every folder above the one named)."""
    if top == root or root not in top.parents:
        return []
    folders = [folder for folder in top.parents if _is_within(folder, root)]
    found = [(folder, _gitignore(folder)) for folder in reversed(folders)]
    return [(folder, spec) for folder, spec in found if spec is not None]


def _skipped(path: Path, is_dir: bool, root: Path, exclude: Spec, ignores: Ignores) -> bool:
    """Whether an entry found below a named folder is excluded: matched itself, from the
    project root (exclude) or from each .gitignore's folder."""
    suffix = "/" if is_dir else ""
    if exclude.matches(_relative(path, root) + suffix):
        return True
    return any(spec.matches(_relative(path, base) + suffix) for base, spec in ignores)


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

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
either). A folder that cannot be read is an error line of its own.

A run that writes (`--fix`) refuses, before it reads anything, a folder or file named on the
command line that leads through a symbolic link inside the project (`out -> ../outside`) or
out of the project: a fix is written only where the path names. A file that is itself a link
is the link rules' above."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from pathlib import Path

from cudalint.config import Config, ConfigError, project_root
from cudalint.engine.reading.reader import read_text
from cudalint.files import ReadError, read_head
from cudalint.kinds import FileKind, by_content, classify, kind_of


class PathError(Exception):
    """A path given on the command line that a run cannot take (exit 2)."""


class MissingPathError(PathError):
    """A path given on the command line does not exist (exit 2)."""


class RefusedPathError(PathError):
    """A path given to a run that writes leads through a link or out of the project (exit 2)."""


def discover(
    paths: Sequence[Path],
    config: Config,
    *,
    force_exclude: bool = False,
    errors: list[tuple[Path, str]] | None = None,
    writing: bool = False,
) -> list[tuple[Path, FileKind]]:
    """Files to check with their kinds, sorted. A file or folder named explicitly is checked
    even when an exclude pattern matches it or a folder above it, unless `force_exclude` (as
    ruff's --force-exclude, which pre-commit hooks use since they pass every file
    explicitly). What cannot be walked is added to `errors` with the reason. `writing` (a
    fix) refuses a path that leads through a link or out of the project (RefusedPathError)."""
    errors = [] if errors is None else errors
    excluded_kinds = {kind.lower() for kind in config.exclude_kinds}
    exclude = _exclude_spec(config)
    root = project_root(config)
    for path in paths:
        if not path.exists():
            raise MissingPathError(f"{path}: no such file or directory")
        if writing:
            _refuse_unsafe(path, root)
    found: dict[Path, FileKind] = {}
    for path in paths:
        if force_exclude and _covered(path.resolve(), path.is_dir(), root, exclude):
            continue
        if path.is_dir():
            for file in _walk(path.resolve(), root, config, exclude, errors):
                kind = kind_of(file)
                if kind is not None and kind.value not in excluded_kinds:
                    found[file] = kind
            continue
        named = _named_file(path, root, errors)
        # its kind from its absolute path: a workflow named from `.github/workflows/` is one
        kind = None if named is None else (classify(Path(os.path.abspath(named)))
                                           or _explicit_kind(named))
        if named is not None and kind is not None and kind.value not in excluded_kinds:
            found[named] = kind
    return sorted(found.items())


def project_python_files(root: Path, config: Config) -> list[str]:
    """The Python files of the project at `root`, as a run of `root` itself finds them (the
    excludes and the .gitignore files, from `root`): what its project facts are read from,
    whatever a run was given. A folder that cannot be read is left out here (the run that
    checks it says so). Absolute paths, as text: a large project's scan makes no Path per
    file."""
    root = root.resolve()
    found = []
    for path, linked in _walk_files(root, root, config, _exclude_spec(config), [], ".py"):
        target = _followed(Path(path), root) if linked else path
        if target is not None:
            found.append(str(target))
    return found


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


def _refuse_unsafe(path: Path, root: Path) -> None:
    """Raise RefusedPathError when a fix of `path` (a folder, or the folder of a file) would
    be written through a symbolic link inside the project, or out of the project: its real
    folder is not the one named, below the deepest link above it that lies in the project or
    the current folder (a link above both, `/var -> /private/var`, is the system's)."""
    folder = Path(os.path.abspath(path))
    if not path.is_dir():
        folder = folder.parent  # a file that is itself a link: `_named_file`
    real = Path(os.path.realpath(folder))
    link = next((p for p in [folder, *folder.parents] if os.path.islink(p)), None)
    if link is not None and _in_a_project(link.parent):
        raise RefusedPathError(f"{path}: leads through a symbolic link ({link} -> {real}); "
                               "--fix writes nothing through a link")
    real_root = Path(os.path.realpath(root))
    if not _is_within(real, real_root) and not _is_within(real, Path.cwd()):
        raise RefusedPathError(f"{path}: lies outside the project ({real_root}); "
                               "--fix writes nothing there")


def _in_a_project(folder: Path) -> bool:
    """Whether `folder` is at or below the current folder, or a folder at or above it holds
    a pyproject.toml or a .git (a project)."""
    if _is_within(folder, Path.cwd()):
        return True
    return any((p / "pyproject.toml").is_file() or (p / ".git").exists()
               for p in [folder, *folder.parents])


def is_excluded(path: Path, kind: FileKind, config: Config) -> bool:
    """Whether --force-exclude skips `path`, which need not exist (standard input's name)."""
    if kind.value in {k.lower() for k in config.exclude_kinds}:
        return True
    return _covered(path.resolve(), False, project_root(config), _exclude_spec(config))


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
    """Gitignore patterns that only include (no negation), translated as pathspec translates
    them (`_translated`): a path is matched when one of them matches it. A walk asks each
    entry whether a pattern matches it itself: a pattern without a slash is then matched with
    the entry's name alone, not run along its whole path."""

    def __init__(self, globs: list[Glob]) -> None:
        self.globs = globs
        ends = {True: "/$", False: "/?$"}  # the trailing slash of a folder: for a folder only
        self.names = _joined([f"{body}{ends[folders]}" for anchored, folders, body in globs
                              if not anchored])
        self.paths = _joined([f"{body}{ends[folders]}" for anchored, folders, body in globs
                              if anchored])

    @cached_property
    def any(self) -> re.Pattern[str]:
        """pathspec's regexes joined: a match of the path or of a folder above it."""
        return _joined([("" if anchored else "(?:.+/)?") + body + ("/" if folders else "(?:/|$)")
                        for anchored, folders, body in self.globs])

    def covers(self, path: str) -> bool:
        """(With no negation, a path is covered when any pattern matches it.)"""
        return self.any.match(_normalized(path)) is not None

    def matches(self, path: str) -> bool:
        folder = path.endswith("/")
        name = (path[:-1] if folder else path).rpartition("/")[2]
        if self.names.match(name + "/" * folder) is not None:
            return True
        return self.paths.match(path) is not None


def _joined(regexes: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{regex})" for regex in regexes) or "(?!)")


class _PathspecPatterns:
    """Any gitignore patterns, through pathspec (imported only for these): negations, `**`,
    escapes. pathspec also decides what a negation re-includes below an excluded folder."""

    def __init__(self, lines: list[str]) -> None:
        import pathspec

        self.spec = pathspec.GitIgnoreSpec.from_lines(lines)
        self.patterns = [(p.regex, bool(p.include)) for p in self.spec.patterns
                         if p.include is not None and p.regex is not None]
        # One regex that any of them matches (their groups unnamed, to join them): most
        # entries of a walk match none, and one match call rules them out.
        self.any = _joined([_GROUP_NAME.sub("(?:", regex.pattern) for regex, _ in self.patterns])

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


# A spec answers two questions: `covers(path)`, whether a pattern matches `path` (a folder's
# ends with "/") or a folder above it, what --force-exclude asks of a path named explicitly;
# `matches(path)`, whether one matches `path` itself, not through a folder above it, what a
# walk asks of each entry, having entered no excluded folder below the one named.
Spec = _Names | _Patterns | _PathspecPatterns
_GROUP_NAME = re.compile(r"\(\?P<\w+>")


def _normalized(path: str) -> str:
    """The path as pathspec matches it: relative, without a leading `/` or `./`."""
    if path.startswith("/"):
        return path[1:]
    return path[2:] if path.startswith("./") else path


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


def _lenient_spec(lines: list[str]) -> Spec:
    """A .gitignore's spec, without the patterns that are no pattern (`[z-a]`): git ignores
    those too."""
    try:
        return _spec(lines)
    except (re.error, ValueError):
        return _spec([line for line in lines if _bad_pattern(line) is None])


def _bad_pattern(line: str) -> str | None:
    """Why a gitignore line is no pattern, or None."""
    try:
        _spec([line])
    except (re.error, ValueError) as error:
        return str(error)
    return None


def _spec(lines: list[str]) -> Spec:
    """A gitignore spec of these lines; pathspec is imported only for patterns that
    `_translated` leaves to it."""
    patterns = [line for line in lines if line.strip() and not line.startswith("#")]
    if all(_Names.PLAIN.fullmatch(line) for line in patterns):
        return _Names(patterns)
    globs = [_translated(line) for line in patterns]
    translated = [glob for glob in globs if glob is not None]
    if len(translated) == len(globs):
        with contextlib.suppress(re.error):  # `[z-a]`: pathspec says what it makes of it
            return _Patterns(translated)
    return _PathspecPatterns(lines)


# What `_translated` takes: globs of names and paths, with neither a negation (`!`), `**`,
# escapes nor spaces (trailing spaces are dropped), and brackets of letters, digits and ranges
# of them (pathspec's `[!a]` and `[+-0]` also match a slash, which no name holds).
_SIMPLE = re.compile(r"(?:[^\s\\!\[\]]|\[(?:[A-Za-z0-9]-[A-Za-z0-9]|[\w.$+~@%,])+\])+")
_GLOB = re.compile(r"\*|\?|\[[^\]]+\]")
Glob = tuple[bool, bool, str]  # anchored (has a slash before its end), folders only, regex


def _translated(line: str) -> Glob | None:
    """One gitignore pattern (see `_SIMPLE`) as pathspec translates it, or None for one left
    to pathspec: a name matches at any depth, a pattern with a slash before its end from the
    .gitignore's folder, and one that ends with a slash only folders (and what lies below
    them)."""
    pattern = line.rstrip(" ")
    if not _SIMPLE.fullmatch(pattern) or "**" in pattern:
        return None
    folders = pattern.endswith("/")
    body = pattern[:-1] if folders else pattern
    anchored = "/" in body
    segments = body.removeprefix("/").split("/")
    if not all(segments) or segments == ["*"]:
        return None  # `/`, `a//b`: left to pathspec, as is `*` (everything)
    return anchored, folders, "/".join(_segment(s, len(segments) > 1) for s in segments)


def _segment(segment: str, in_path: bool) -> str:
    """One segment of a pattern: `*` and `?` never match a slash; a segment that is only `*`
    in a path stands for one non-empty name."""
    if in_path and segment == "*":
        return "[^/]+"
    parts, done = [], 0
    for glob in _GLOB.finditer(segment):
        parts.append(re.escape(segment[done:glob.start()]))
        text = glob.group()
        parts.append({"*": "[^/]*", "?": "[^/]"}.get(text, text))  # a bracket as it is
        done = glob.end()
    parts.append(re.escape(segment[done:]))
    return "".join(parts)


def _covered(path: Path, is_dir: bool, root: Path, exclude: Spec) -> bool:
    """A path named explicitly (absolute), matched with the folders above it up to the project
    root (without a configuration, the nearest pyproject.toml or git root): `dist/gen.py` is
    excluded by `dist` from anywhere. The project root itself is never excluded, whatever the
    names of its folders."""
    if path == root:
        return False
    return exclude.covers(_relative(str(path), str(root)) + ("/" if is_dir else ""))


def _exclude_spec(config: Config) -> Spec:
    try:
        return _spec([*config.exclude, *config.extend_exclude])
    except (re.error, ValueError):
        pass
    for key, patterns in (("exclude", config.exclude), ("extend-exclude", config.extend_exclude)):
        for pattern in patterns:
            problem = _bad_pattern(pattern)
            if problem is not None:
                raise ConfigError(f"{config.source}: [tool.cudalint] {key}: {pattern!r} is not "
                                  f"a pattern ({problem})") from None
    raise ConfigError(f"{config.source}: [tool.cudalint] exclude: not a list of patterns")


def _explicit_kind(path: Path) -> FileKind | None:
    """A file named on the command line that no name pattern knows: a Python or shell script
    by its shebang, a `.py`-like name as Python, anything else (README.md) skipped."""
    if path.suffix in (".py", ".pyw"):
        return FileKind.PYTHON
    if path.suffix:
        return by_content(path)
    try:
        first = read_head(path, 200).partition(b"\n")[0]
    except ReadError:  # a FIFO is never waited on
        return FileKind.PYTHON  # reported as unreadable (or not regular) when checked
    if first.startswith(b"#!") and b"python" in first:
        return FileKind.PYTHON
    if first.startswith(b"#!") and (b"sh" in first):
        return FileKind.SHELL
    return None


Ignores = list[tuple[str, Spec]]  # each .gitignore's folder (absolute) and its patterns


def _walk(
    top: Path, root: Path, config: Config, exclude: Spec, errors: list[tuple[Path, str]]
) -> Iterator[Path]:
    """The files below `top`, top-down and by name as os.walk goes (a linked folder is not
    entered), through os.scandir: an entry's type comes with its name, so that only a link
    costs a system call, and a folder's .gitignore is read only where it is listed."""
    for path, linked in _walk_files(top, root, config, exclude, errors):
        target = _followed(Path(path), top) if linked else Path(path)
        if target is not None:
            yield target


def _walk_files(
    top: Path, root: Path, config: Config, exclude: Spec, errors: list[tuple[Path, str]],
    suffix: str | None = None,
) -> Iterator[tuple[str, bool]]:
    """`_walk`'s files, each as its path and whether it is a symbolic link (not followed);
    with `suffix`, only those whose name ends so (the others are not matched against the
    excludes at all: most of a package's files, in a scan for its Python files)."""
    above = _gitignores_above(top, root) if config.respect_gitignore else []
    pending, root_text = [(str(top), above)], str(root)
    while pending:
        folder, ignores = pending.pop()
        entries = _entries(folder, errors)
        if config.respect_gitignore and ".gitignore" in entries:
            spec = _gitignore(folder)
            if spec is not None:
                ignores = [*ignores, (folder, spec)]
        folders = []
        for name in sorted(entries):
            entry = entries[name]
            is_dir = _is_dir(entry)
            if suffix is not None and not is_dir and not name.endswith(suffix):
                continue
            if _skipped(entry.path, is_dir, root_text, exclude, ignores):
                continue
            if is_dir:
                if not _is_link(entry):
                    folders.append(entry.path)
                continue
            yield entry.path, _is_link(entry)
        pending += [(child, ignores) for child in reversed(folders)]


def _entries(folder: str, errors: list[tuple[Path, str]]) -> dict[str, os.DirEntry[str]]:
    """A folder's entries by name; none, with an error line, when it cannot be read."""
    try:
        with os.scandir(folder) as listing:
            return {entry.name: entry for entry in listing}
    except OSError as error:
        where = Path(error.filename or folder)
        errors.append((where, f"cannot read the folder: {error.strerror}; skipped"))
        return {}


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """As os.walk asks: a link to a folder is a folder (listed, never entered)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _gitignores_above(top: Path, root: Path) -> Ignores:
    """The .gitignore files of the folders from the project root down to the folder above
    `top` (ripgrep and ruff read those of every folder above the one named)."""
    if top == root or root not in top.parents:
        return []
    folders = [str(folder) for folder in top.parents if _is_within(folder, root)]
    found = [(folder, _gitignore(folder)) for folder in reversed(folders)]
    return [(folder, spec) for folder, spec in found if spec is not None]


def _skipped(path: str, is_dir: bool, root: str, exclude: Spec, ignores: Ignores) -> bool:
    """Whether an entry found below a named folder is excluded: matched itself, from the
    project root (exclude) or from each .gitignore's folder."""
    suffix = "/" if is_dir else ""
    if exclude.matches(_relative(path, root) + suffix):
        return True
    return any(spec.matches(_relative(path, base) + suffix) for base, spec in ignores)


def _gitignore(folder: str) -> Spec | None:
    text = read_text(Path(folder, ".gitignore"))
    return None if text is None else _lenient_spec(text.splitlines())


def _relative(path: str, base: str) -> str:
    """`path` relative to `base` (both absolute), or the path itself when outside it."""
    prefix = base + os.sep
    relative = path[len(prefix):] if path.startswith(prefix) else path
    return relative.replace(os.sep, "/")


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

"""Where `--fix` puts the standalone device helper when the project does not depend on
cudalint, so that the fixed code runs without cudalint installed, from every entry point.

The place follows how each fixed module is really imported, from the project's import roots
(the project's root, where root scripts and `python -m` run; `src/` in a src layout):

- a module of a regular package whose top package sits at an import root (or below folders
  that no import can name, `site-packages/`) imports `<top package>._device`
  (`pkg/_device.py`, `src/pkg/_device.py`): it travels with the package, installed or not;
- a root script, a package under namespace folders (PEP 420) that the project imports through
  them (`lab/models/sub/m.py` as `lab.models.sub.m`) and a module of a plain folder that the
  project imports by its dotted name (`field/utils.py` as `field.utils`) import the helper at
  the root: `<pkg>._device` when the root holds exactly one package (besides `tests/` and the
  like), else `_device` (`_device.py` at the root);
- anything else has no import that is sure to resolve: a notebook (its kernel may run
  anywhere), a script in a subfolder (`python tools/train.py` puts `tools/` first on sys.path),
  a file loaded by path (`configs/*.py`), a file outside the project. Its fixes carry the
  helper inline (`INLINE_MODULE`, cudalint.runtime.helper.inline_block).

The root is the run's project, or the nearest folder below it with a pyproject.toml, a
setup.py or a .git at or above the file (a sub-project: its own helper, its tests inline;
`sub_project_root`). A root is no package of its own files even with an `__init__.py`, and a
folder whose name no import can spell (`my-repo/`) is never part of a module's name. Where
something of the project's own answers to `_device` (a `_device.py` that is no helper copy, a
`_device/` package, an extension; for a top-level helper, one in the importing file's own
folder, which a script run by path finds first) the helper is `_cudalint_device`, else inline.
A module that puts folders on sys.path itself imports the helper below that set-up
(engine.fixes.imports.after_path_setup). The answer depends on the project's tree, never on
which files a run was given, so fixing one file writes what fixing the whole tree writes for
it. `helper = "..."` in [tool.cudalint] names another module (`"cudalint.device"` to depend
on cudalint instead); one of the project's packages that does not exist yet is written there
(`configured_helper_file`).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from cudalint.config import DEFAULT_MAX_FILE_SIZE, ConfigError
from cudalint.engine.reading.reader import ReadError, read_regular
from cudalint.engine.settings import INLINE_MODULE, is_helper_copy
from cudalint.files import read_text
from cudalint.kinds import FileKind
from cudalint.record import Record

HELPER_NAME = "_device"
FALLBACK_NAME = "_cudalint_device"  # when the project has a `_device.py` of its own


class HelperPlace(Record):
    __slots__ = ("module", "path")
    FIELDS = ("module", "path")

    def __init__(self, module: str, path: Path | None) -> None:
        self.module = module  # what the fixed file imports (INLINE_MODULE: nothing)
        self.path = path  # where the helper is written when a fix uses it (None: inline)


INLINE = HelperPlace(INLINE_MODULE, None)


def helper_place(path: Path, kind: FileKind, root: Path, *, fixing: bool = True) -> HelperPlace:
    """The helper module a file of the project at `root` imports, and where that module's
    file is (or INLINE). Whether the project imports a plain folder by name is read from its
    files only when `fixing` (a check alone assumes it does: the place only names the
    helper in messages there)."""
    if kind is FileKind.NOTEBOOK:
        return INLINE
    if os.path.islink(path):
        return _place(path.resolve().parent, _real_folder(root), fixing)
    # absolute: an editor's server (and a test) runs from more than one folder
    return _folder_place(os.path.dirname(os.path.abspath(path)), os.path.abspath(root), fixing)


# Once per folder, keyed by its text: a run asks for every file, and making and hashing a
# Path per file cost more than the answer.
@lru_cache(maxsize=1024)
def _folder_place(folder: str, root: str, fixing: bool) -> HelperPlace:
    return _place(_real_folder(Path(folder)), _real_folder(Path(root)), fixing)


@lru_cache(maxsize=1024)
def _place(folder: Path, root: Path, fixing: bool) -> HelperPlace:
    if folder != root and root not in folder.parents:
        return INLINE  # outside the project
    root = sub_project_root(folder, root)
    # A project's root is no package of its own files, even with an `__init__.py` (a root
    # found by its pyproject.toml, setup.py or .git; a run in a folder without one may be
    # inside a package).
    top = _top_package(folder, root if _marks_a_project(root) else None)
    place = _package_place(folder, root, top, fixing)
    return place if place.path is None else _unshadowed(place, folder)


def _package_place(folder: Path, root: Path, top: Path | None, fixing: bool) -> HelperPlace:
    if top is not None and (top.parent in (root, root / "src") or root not in top.parents):
        return _in(top, f"{top.name}.")  # (the run is inside the package: its root is above)
    if top is None and folder == root / "src":
        return _in(folder, "")  # a module of a src layout: `src/` is its import root
    if top is not None:
        # Under namespace folders (`lab/models/` without `__init__.py`) that the project
        # imports it through (`lab.models.sampling.m`): imported from the root. Otherwise
        # (`site-packages/`, `Mes projets/`, a folder no import names) its own parent is what
        # puts it on the path.
        if fixing and _through_namespace(top, root):
            return _root_place(root)
        return _in(top, f"{top.name}.")
    if folder == root or not fixing or _imported_by_name(folder, root):
        return _root_place(root)
    return INLINE


@lru_cache(maxsize=8)
def configured_helper_file(root: Path, module: str) -> Path | None:
    """The file of the configured `helper = "pkg.device"` that `--fix` writes (as
    `cudalint init-helper` would, cut down to what the fixes use) or extends: where the
    project holds the package but not the module (or a copy of the helper there). None where
    the module is the project's own (a file or a package that is no helper copy), cudalint's,
    or installed. ConfigError (one line) where it names a package the project does not hold
    and nothing installed: a fixed file would import nothing."""
    parts = module.split(".")
    if parts[0] == "cudalint":
        return None
    for base in (root, root / "src"):
        if not ((base / parts[0]).is_dir() or (base / f"{parts[0]}.py").is_file()):
            continue
        folder = base.joinpath(*parts[:-1])
        file = folder / f"{parts[-1]}.py"
        if (folder / parts[-1]).is_dir():
            return None  # a package of the project's own
        if file.is_file():
            return file if _is_helper_file(file) else None
        if folder.is_dir():
            return file
        raise ConfigError(f"helper = {module!r} ([tool.cudalint]): no folder {folder}: "
                          f"write it with `cudalint init-helper`, or name another module")
    import importlib.util  # only for a helper outside the project

    try:
        installed = importlib.util.find_spec(parts[0]) is not None
    except (ImportError, ValueError):
        installed = False
    if installed:
        return None
    if len(parts) == 1:
        return root / f"{module}.py"  # a module at the root, beside root scripts
    raise ConfigError(f"helper = {module!r} ([tool.cudalint]): no package {parts[0]} in "
                      f"{root} nor installed: write it with `cudalint init-helper`, or name "
                      f"another module")


def _is_helper_file(path: Path) -> bool:
    try:
        return is_helper_copy(read_regular(path, DEFAULT_MAX_FILE_SIZE))
    except ReadError:
        return False


def _in(home: Path, prefix: str) -> HelperPlace:
    name = _free_name(home)
    return INLINE if name is None else HelperPlace(f"{prefix}{name}", home / f"{name}.py")


# What makes a folder a project's root (the sub-project of a larger repository included).
PROJECT_MARKS = ("pyproject.toml", "setup.py", ".git")


def sub_project_root(folder: Path, root: Path) -> Path:
    """The root of the project `folder` is in: the nearest folder at or above it, and below
    `root`, holding a pyproject.toml, a setup.py or a .git (a sub-project, with its own
    tests, installed on its own), else `root`."""
    for candidate in (folder, *folder.parents):
        if candidate == root or root not in candidate.parents:
            return root
        if _marks_a_project(candidate):
            return candidate
    return root


def _marks_a_project(folder: Path) -> bool:
    return any(os.path.lexists(folder / mark) for mark in PROJECT_MARKS)


def _unshadowed(place: HelperPlace, folder: Path) -> HelperPlace:
    """A top-level helper module (`_device`) imported by a file in another folder: that
    folder comes first on `sys.path` where the file runs by path, so a `_device` of its own
    there would be imported instead: the other name where it is free in both, else INLINE."""
    if "." in place.module or place.path is None or place.path.parent == folder:
        return place
    name = place.module
    if not _taken(folder, name):
        return place
    home = place.path.parent
    for other in (HELPER_NAME, FALLBACK_NAME):
        if not _taken(folder, other) and not _taken(home, other, helper_ok=True):
            return HelperPlace(other, home / f"{other}.py")
    return INLINE


@lru_cache(maxsize=64)
def _root_place(root: Path) -> HelperPlace:
    """The helper of the modules imported from the root: in the root's one package, else
    beside them."""
    packages = [child for child in _children(root) if (child / "__init__.py").is_file()
                and child.name.isidentifier() and child.name not in _NOT_THE_PROJECT]
    if len(packages) == 1:
        return _in(packages[0], f"{packages[0].name}.")
    return _in(root, "")


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(child for child in folder.iterdir() if child.is_dir()
                      and not child.name.startswith("."))
    except OSError:
        return []


# Packages beside the project's own that its root scripts would not import the helper from.
_NOT_THE_PROJECT = frozenset({"tests", "test", "testing", "docs", "doc", "examples",
                              "benchmarks", "scripts"})
# Folders a project's own code does not live in.
NOT_SOURCE = frozenset({"__pycache__", "node_modules", "site-packages", "venv", "env", "build",
                         "dist"})
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([A-Za-z_][\w.]*)[ \t]+import|import[ \t]+"
                     r"([A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*))", re.MULTILINE)


def _through_namespace(top: Path, root: Path) -> bool:
    """Whether the package `top`, below plain folders of `root`, is imported through them
    (`lab.models.sampling`): so the project imports it; where it imports it by its own name
    (`sampling.x`: its folder is put on the path) it is not; with neither, it is where every
    folder above it is a name an import could spell (`ns/sub/m.py`, run as `import ns.sub.m`)."""
    if _dotted(top.parent, root) is None:
        return False  # `site-packages/`, `Mes projets/`: no import names them
    if _imported_by_name(top, root):
        return True
    own = top.name
    return not any(name == own or name.startswith(own + ".") for name in _imported(root))


def _imported_by_name(folder: Path, root: Path) -> bool:
    """Whether some module of the project imports `folder` (a plain folder below `root`) by
    its dotted name: `field.utils`, `from field import utils`."""
    dotted = _dotted(folder, root)
    return dotted is not None and any(name == dotted or name.startswith(dotted + ".")
                                      for name in _imported(root))


def _dotted(folder: Path, root: Path) -> str | None:
    """The dotted name of `folder` from `root` ("" for the root), None where a part of it is
    no identifier (`Mes projets/`): no import names it."""
    parts = folder.relative_to(root).parts
    return ".".join(parts) if all(part.isidentifier() for part in parts) else None


@lru_cache(maxsize=8)
def _imported(root: Path) -> frozenset[str]:
    """Every absolute module name the project's Python files import."""
    names: set[str] = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in NOT_SOURCE]
        for file in files:
            if not file.endswith(".py"):
                continue
            text = read_text(os.path.join(folder, file), DEFAULT_MAX_FILE_SIZE)
            if text is None or "import" not in text:  # a FIFO is never waited on
                continue
            for match in _IMPORT.finditer(text):
                if match.group(1) is not None:
                    names.add(match.group(1))
                else:
                    names.update(n.strip() for n in match.group(2).split(","))
    return frozenset(names)


@lru_cache(maxsize=1024)  # once per folder, not per file
def _real_folder(folder: Path) -> Path:
    """`folder.resolve()`, from its parent's real path where the folder is no link: one
    system call per folder (a realpath costs one per component, and a tree shares them)."""
    if folder.name in ("", ".."):  # the root, the current folder, `a/..`: realpath decides
        return folder.resolve()
    try:
        linked = folder.is_symlink()
    except OSError:
        linked = True
    return folder.resolve() if linked else _real_folder(folder.parent) / folder.name


@lru_cache(maxsize=1024)  # the folders of one package share their parents' answers
def _top_package(folder: Path, stop: Path | None = None) -> Path | None:
    """The outermost folder of the package `folder` is in (folders with `__init__.py` whose
    names an import can spell: `my-repo/` is none), below `stop` (a project's root)."""
    if folder == stop or not folder.name.isidentifier() \
            or not (folder / "__init__.py").is_file():
        return None
    if folder.parent == folder:
        return folder
    return _top_package(folder.parent, stop) or folder


def _free_name(home: Path) -> str | None:
    """`_device`, unless something of the project's own is at that name (a `_device.py`
    that is not the helper, a `_device/` package, which an import finds first, an extension
    module): `_cudalint_device`, unless that is taken too (None)."""
    for name in (HELPER_NAME, FALLBACK_NAME):
        if not _taken(home, name, helper_ok=True):
            return name
    return None


def _taken(folder: Path, name: str, *, helper_ok: bool = False) -> bool:
    """Whether `import <name>` from `folder` finds something there (with `helper_ok`, other
    than a copy of the device helper at `<name>.py`)."""
    try:
        entries = [entry for entry in os.listdir(folder)
                   if entry == name or entry.startswith(name + ".")]
    except OSError:
        return False
    for entry in entries:
        if entry == f"{name}.py" and helper_ok:
            try:
                if is_helper_copy(read_regular(folder / entry, DEFAULT_MAX_FILE_SIZE)):
                    continue
            except ReadError:  # a link, a FIFO: the writer refuses it, naming it
                continue
            return True
        if entry == name or entry.endswith((".py", ".pyc", ".so", ".pyd")):
            return True
    return False

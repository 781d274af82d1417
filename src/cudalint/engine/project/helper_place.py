"""Where `--fix` puts the standalone device helper when the project does not depend on
cudalint, so that the fixed code runs without cudalint installed.

A module of a package imports `<top package>._device` (the helper sits in the top package:
`pkg/_device.py`, `src/pkg/_device.py`), which works for `import pkg.train` and
`python -m pkg.train`. A script outside any package, and a notebook, import `_device` from a
helper beside it, which works for `python train.py` and for a notebook's kernel started in
its folder. `helper = "..."` in [tool.cudalint] names another module (`"cudalint.device"` to
depend on cudalint instead).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from cudalint.config import DEFAULT_MAX_FILE_SIZE
from cudalint.engine.reading.reader import ReadError, read_regular
from cudalint.kinds import FileKind
from cudalint.record import Record

HELPER_NAME = "_device"
FALLBACK_NAME = "_cudalint_device"  # when the project has a `_device.py` of its own
# The first bytes of the helper's source (cudalint/device.py): a file that starts so is a
# copy of the helper, which a run neither checks nor fixes.
HELPER_MARKER = b'"""Portable device selection and `torch.cuda.*` replacements (written by'


class HelperPlace(Record):
    __slots__ = ("module", "path")
    FIELDS = ("module", "path")

    def __init__(self, module: str, path: Path) -> None:
        self.module = module  # what the fixed file imports
        self.path = path  # where the helper is written when a fix uses it


def is_helper_copy(data: bytes) -> bool:
    return data.lstrip(b"\xef\xbb\xbf").startswith(HELPER_MARKER)


def helper_place(path: Path, kind: FileKind) -> HelperPlace:
    """The helper module a file imports, and where that module's file is."""
    notebook = kind is FileKind.NOTEBOOK
    if os.path.islink(path):
        return _place(path.resolve().parent, notebook=notebook)
    return _folder_place(os.path.dirname(path), notebook)


# Once per folder, keyed by its text: a run asks for every file, and making and hashing a
# Path per file cost more than the answer.
@lru_cache(maxsize=1024)
def _folder_place(folder: str, notebook: bool) -> HelperPlace:
    return _place(_real_folder(Path(folder)), notebook=notebook)


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


@lru_cache(maxsize=1024)  # the files of one folder share it
def _place(folder: Path, *, notebook: bool) -> HelperPlace:
    top = None if notebook else _top_package(folder)
    home = top if top is not None else folder
    name = _free_name(home)
    module = f"{top.name}.{name}" if top is not None else name
    return HelperPlace(module, home / f"{name}.py")


@lru_cache(maxsize=1024)  # the folders of one package share their parents' answers
def _top_package(folder: Path) -> Path | None:
    """The outermost folder of the package `folder` is in (folders with `__init__.py`)."""
    if not (folder / "__init__.py").is_file():
        return None
    if folder.parent == folder:
        return folder
    return _top_package(folder.parent) or folder


def _free_name(home: Path) -> str:
    """`_device`, unless the project has a `_device.py` that is not the helper."""
    existing = home / f"{HELPER_NAME}.py"
    try:
        data = read_regular(existing, DEFAULT_MAX_FILE_SIZE)
    except ReadError:
        return HELPER_NAME
    return HELPER_NAME if is_helper_copy(data) else FALLBACK_NAME

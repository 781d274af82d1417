"""The standalone device helper a fixed file imports (engine.project.helper_place), made to
define what it imports BEFORE that file is written, so that whatever ends a run (Ctrl-C,
SIGTERM, SIGKILL, a full disk) no file imports a helper that is not there.

Its folder is locked (`flock`) while the helper is read and written: the worker processes of
a run, and two runs, extend it one at a time. It is created whole or not at all (a temporary
file linked into place, which fails where anything is at its name, a dangling link included),
and extended through the writer (cudalint.writing): the missing functions are added to its
text, everything its user wrote in it kept (a text that cannot be extended so is a
WriteError). Nothing is written through a symbolic link, into a folder that resolves
elsewhere (outside the project: the place is a real folder), into a read-only folder, or over
a file that is not a copy of the helper: each is a WriteError naming the helper, and the file
importing it is not written either.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from cudalint.engine.settings import MAX_HELPER_SIZE, is_helper_copy
from cudalint.files import ReadError, read_regular
from cudalint.writing import (
    WriteError,
    create_file,
    require_writable_folder,
    signals_deferred,
    write_fixed,
)

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def ensure_helper(path: Path, names: frozenset[str]) -> bool:
    """Make the helper at `path` define `names`, creating or extending it; True where this
    call wrote it. WriteError (a line naming the helper) where it cannot."""
    try:
        with signals_deferred(), _folder_locked(path.parent):
            return _ensure(path, names)
    except WriteError as error:
        reason = str(error).removeprefix("not written: ")
        raise WriteError(f"not written: cannot write the device helper {path}: {reason}") \
            from error
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise WriteError(f"not written: cannot write the device helper {path}: {reason}") \
            from error


def helper_defines(path: Path, names: frozenset[str]) -> bool:
    """Whether a helper copy at `path` (not through a link) defines every name of `names`."""
    try:
        data = read_helper(path)
    except (OSError, WriteError):
        return False
    return data is not None and names <= _defined(data)


@contextlib.contextmanager
def _folder_locked(folder: Path) -> Iterator[None]:
    descriptor = os.open(folder, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        if os.path.realpath(folder) != os.path.abspath(folder):
            raise WriteError("its folder is reached through a symbolic link")
        yield
    finally:
        os.close(descriptor)


def _ensure(path: Path, names: frozenset[str]) -> bool:
    from cudalint.runtime.helper import helper_module_text  # only when a fix imports it

    data = read_helper(path)
    if data is None:
        require_writable_folder(path.parent)
        create_file(path, helper_module_text(names).encode())
        return True
    have = _defined(data)
    if names <= have:
        return False
    write_fixed(path, extended(data, names), data)
    return True


def extended(data: bytes, names: frozenset[str]) -> bytes:
    """The helper `data` with `names` added, what its user wrote in it kept byte for byte
    (cudalint.runtime.helper.extended_module_text); WriteError where that cannot be done."""
    from cudalint.runtime.helper import NotExtensible, extended_module_text

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise WriteError("not written: it is not UTF-8 text, and cannot be extended") from None
    try:
        return extended_module_text(text, names).encode("utf-8")
    except NotExtensible as error:
        raise WriteError(f"not written: it cannot be extended with {', '.join(sorted(names))}"
                         f" and keep what is written in it: {error}") from None


def read_helper(path: Path) -> bytes | None:
    """The helper copy at `path`; None where nothing is there; WriteError where something
    else is (a link, dangling or not, another kind of file, a module of the project's own)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise WriteError("a symbolic link")
    try:  # a FIFO is never waited on: "not a regular file (a FIFO)"
        data = read_regular(path, MAX_HELPER_SIZE, follow=False)
    except ReadError as error:
        raise WriteError(str(error)) from None
    if not is_helper_copy(data):
        raise WriteError("a module of the project's own is there")
    return data


def _defined(data: bytes) -> frozenset[str]:
    from cudalint.runtime.helper import module_names

    return module_names(data.decode("utf-8", errors="replace"))

"""Reading a file to check: regular files only, within a size limit, never blocking.

A FIFO named `x.py` would block `open()` forever and `/dev/zero` would fill the memory, so the
file is examined before it is opened, opened non-blocking, and examined again once open (it may
have been swapped in between). Reading stops one byte past the limit.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cudalint.config import DEFAULT_MAX_FILE_SIZE

# Shared libraries are read for their ELF headers only; CUDA builds run to hundreds of MB.
MAX_BINARY_SIZE = 1024 * 1024 * 1024
# LibCST takes about 0.7 GB per MB of typical Python (measured up to 1.9 GB per MB of dense
# one-line statements, 0.3 GB per MB of docstring-heavy code).
MEMORY_PER_SOURCE_BYTE = 700
_CHUNK = 1024 * 1024
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class ReadError(Exception):
    """Why a file was not read, on one line."""


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes; else ReadError."""
    try:
        _require_regular(os.stat(path), limit)
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise ReadError(f"cannot read: {error.strerror or type(error).__name__}") from error
    try:
        _require_regular(os.fstat(descriptor), limit)
        return _read_at_most(descriptor, limit)
    except OSError as error:
        raise ReadError(f"cannot read: {error.strerror or type(error).__name__}") from error
    finally:
        os.close(descriptor)


def read_text(path: Path) -> str | None:
    """The UTF-8 text of a project file read on the side (setup.py, .gitignore), or None
    where there is no such regular file, or it cannot be read."""
    try:
        return read_regular(path, DEFAULT_MAX_FILE_SIZE).decode("utf-8")
    except (ReadError, UnicodeDecodeError):
        return None


def _require_regular(info: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise ReadError(f"not a regular file ({_kind(info.st_mode)}); skipped")
    if info.st_size > limit:
        raise ReadError(too_large(info.st_size, limit))


def _read_at_most(descriptor: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = os.read(descriptor, min(_CHUNK, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    raise ReadError(too_large(size, limit))  # it grew after it was examined


def require_memory(size: int, budget: int) -> None:
    """ReadError where `size` bytes of Python predict more memory to check than `budget`."""
    needed = size * MEMORY_PER_SOURCE_BYTE
    if needed > budget:
        raise ReadError(f"skipped: {_readable(size)} of Python needs about {_readable(needed)} "
                        f"to check, more than max-memory ({_readable(budget)})")


def too_large(size: int, limit: int) -> str:
    return f"skipped: {_readable(size)}, more than max-file-size ({_readable(limit)})"


def _readable(size: int) -> str:
    if size >= 1_000_000_000:
        return f"{size / 1_000_000_000:.1f} GB"
    if size >= 1_000_000:
        return f"{size / 1_000_000:.1f} MB"
    return f"{size / 1000:.0f} kB" if size >= 1000 else f"{size} bytes"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a file")

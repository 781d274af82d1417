"""Reading a file cudalint did not make (a source, a configuration, a smoke report): regular
files only, within a size limit, never blocking.

A FIFO named `x.py` would block `open()` forever and `/dev/zero` would fill the memory, so the
file is examined before it is opened, opened non-blocking, and examined again once open (it may
have been swapped in between). Reading stops one byte past the limit.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

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


class NotRegular(ReadError):
    """The path is a folder, a FIFO, a socket or a device: never opened for reading."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"not a regular file ({kind})")
        self.kind = kind


class TooLarge(ReadError):
    """The file holds more than the limit: never read whole."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{readable(size)}, more than {readable(limit)}")
        self.size, self.limit = size, limit


def read_regular(path: Path | str, limit: int) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes; else ReadError."""
    descriptor = _open(path, limit)
    try:
        parts: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(descriptor, min(_CHUNK, limit + 1 - size))
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
            size += len(chunk)
    except OSError as error:
        raise _cannot(error) from error
    finally:
        os.close(descriptor)
    raise TooLarge(size, limit)  # it grew after it was examined


def read_head(path: Path | str, size: int) -> bytes:
    """The first `size` bytes (or fewer) of `path`, a regular file of any size (a shebang
    line); else ReadError."""
    descriptor = _open(path, None)
    try:
        return os.read(descriptor, size)
    except OSError as error:
        raise _cannot(error) from error
    finally:
        os.close(descriptor)


def chunks(path: Path | str) -> Iterator[bytes]:
    """The bytes of `path`, a regular file of any size, a chunk at a time (to hash it); else
    ReadError."""
    descriptor = _open(path, None)
    try:
        while chunk := os.read(descriptor, _CHUNK):
            yield chunk
    except OSError as error:
        raise _cannot(error) from error
    finally:
        os.close(descriptor)


def _open(path: Path | str, limit: int | None) -> int:
    """`path` opened for reading, non-blocking, once it is known to be a regular file (within
    `limit` bytes, when given), before and after it is opened."""
    try:
        _require_regular(os.stat(path), limit)
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise _cannot(error) from error
    try:
        _require_regular(os.fstat(descriptor), limit)
    except (OSError, ReadError) as error:
        os.close(descriptor)
        raise _cannot(error) if isinstance(error, OSError) else error from None
    return descriptor


def _cannot(error: OSError) -> ReadError:
    return ReadError(f"cannot read: {error.strerror or type(error).__name__}")


def _require_regular(info: os.stat_result, limit: int | None) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise NotRegular(next((name for test, name in _KINDS if test(info.st_mode)),
                              "not a file"))
    if limit is not None and info.st_size > limit:
        raise TooLarge(info.st_size, limit)


def readable(size: int) -> str:
    """A byte count as people read it: 3 kB, 4.2 MB, 1.1 GB."""
    if size >= 1_000_000_000:
        return f"{size / 1_000_000_000:.1f} GB"
    if size >= 1_000_000:
        return f"{size / 1_000_000:.1f} MB"
    return f"{size / 1000:.0f} kB" if size >= 1000 else f"{size} bytes"


def read_text(path: Path | str, limit: int) -> str | None:
    """The text of `path` (UTF-8, an undecodable byte replaced), or None where it is no regular
    file of at most `limit` bytes, or cannot be read."""
    try:
        return read_regular(path, limit).decode("utf-8", errors="replace")
    except ReadError:
        return None

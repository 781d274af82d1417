"""Reading a file to check: regular files only, within a size limit, never blocking
(cudalint.files), with the lines a run prints for a file it skips.
"""

from __future__ import annotations

from pathlib import Path

from cudalint import files
from cudalint.config import DEFAULT_MAX_FILE_SIZE
from cudalint.files import ReadError, readable

__all__ = ["MAX_BINARY_SIZE", "MOST_MEMORY_PER_SOURCE_BYTE", "ReadError", "read_regular",
           "read_text", "require_memory", "too_large"]

# Shared libraries are read for their ELF headers only; CUDA builds run to hundreds of MB.
MAX_BINARY_SIZE = 1024 * 1024 * 1024
# LibCST takes about 0.7 GB per MB of typical Python (measured up to 1.9 GB per MB of dense
# one-line statements, 0.3 GB per MB of docstring-heavy code).
MEMORY_PER_SOURCE_BYTE = 700
# The most a check or a fix was measured to take, per byte (dense one-line statements; a fix
# of a 4 MB file took 6.6 GB): a file that may need more than max-memory at this rate is
# checked in a worker process capped at max-memory (engine.running.runner.check_all).
MOST_MEMORY_PER_SOURCE_BYTE = 2000


def read_regular(path: Path | str, limit: int) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes; else ReadError, with the
    line a run prints for the file."""
    try:
        return files.read_regular(path, limit)
    except files.NotRegular as error:
        raise ReadError(f"{error}; skipped") from error
    except files.TooLarge as error:
        raise ReadError(too_large(error.size, limit)) from error


def read_text(path: Path) -> str | None:
    """The UTF-8 text of a project file read on the side (setup.py, .gitignore), or None
    where there is no such regular file, or it cannot be read."""
    try:
        return read_regular(path, DEFAULT_MAX_FILE_SIZE).decode("utf-8")
    except (ReadError, UnicodeDecodeError):
        return None


def require_memory(size: int, budget: int) -> None:
    """ReadError where `size` bytes of Python predict more memory to check than `budget`."""
    needed = size * MEMORY_PER_SOURCE_BYTE
    if needed > budget:
        raise ReadError(f"skipped: {readable(size)} of Python needs about {readable(needed)} "
                        f"to check, more than max-memory ({readable(budget)})")


def too_large(size: int, limit: int) -> str:
    return f"skipped: {readable(size)}, more than max-file-size ({readable(limit)})"

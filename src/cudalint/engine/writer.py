"""Writing fixed files: atomically, with the file's mode kept; bytes in, bytes out, so the
encoding, a BOM and the line endings are whatever the fixer kept."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` through a temporary file in the same folder and a rename,
    so an interrupted write never leaves a half-written file."""
    path = path.resolve()  # through a symbolic link, to the file it names
    mode = path.stat().st_mode & 0o7777
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise

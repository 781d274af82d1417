"""How paths are shown: relative to the current folder when inside it, as ruff does.
Symbolic links are not followed: a finding names the path that was checked."""

from __future__ import annotations

import os
from pathlib import Path


def absolute(path: Path) -> str:
    return os.path.abspath(path)


def display_path(path: Path) -> str:
    full, here = absolute(path), os.getcwd()
    if full.startswith(here + os.sep):
        return Path(os.path.relpath(full, here)).as_posix()
    return os.fspath(path)

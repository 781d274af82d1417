"""How paths are shown: relative to the current folder when inside it, as ruff does."""

from __future__ import annotations

import os
from pathlib import Path


def display_path(path: Path) -> str:
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return os.fspath(path)


def absolute(path: Path) -> str:
    return os.fspath(Path(path).resolve())

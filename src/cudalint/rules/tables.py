"""The rules' data tables (src/cudalint/data/*.toml), each read once."""

from __future__ import annotations

from cudalint.data import load

__all__ = ["load"]

"""Readers for the non-Python files the audit rules check, each giving rows and columns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FormatError:
    """Why a file is not valid YAML or TOML, and where (1-based)."""

    message: str
    row: int = 1
    column: int = 1

"""Shared by the smoke tests: where the targets are, and how to read a report."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import cudalint

TARGETS = Path(__file__).parent / "targets"
SRC = Path(cudalint.__file__).resolve().parent.parent


def target(name: str) -> str:
    """The TARGET for `name` = "file.py:function" under targets/."""
    return str(TARGETS / name)


def subprocess_env(**extra: str) -> dict[str, str]:
    """This environment, without a device override, with cudalint importable."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUDALINT_DEVICE", "PYTHONPATH")}
    env["PYTHONPATH"] = str(SRC)
    env.update(extra)
    return env


def check(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(item for item in report["checks"] if item["name"] == name)


def hazard(report: dict[str, Any], subject: str) -> dict[str, Any]:
    return next(item for item in report["hazards"] if item["subject"] == subject)

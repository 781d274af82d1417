from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# The tests must not depend on the developer's environment picking a device.
os.environ.pop("CUDALINT_DEVICE", None)


@pytest.fixture
def chdir_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """A copy of the bundled demo project (fixtures/demo), free to fix and run."""
    copy = tmp_path / "demo"
    shutil.copytree(DEMO, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pt"))
    return copy


@pytest.fixture(scope="session")
def warm_python():
    """Python programs forked from a process that imported torch once (tests/warm_python.py)."""
    from tests.warm_python import WarmPython

    warm = WarmPython()
    yield warm
    warm.close()

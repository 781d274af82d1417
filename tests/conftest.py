from __future__ import annotations

import os

import pytest

# The tests must not depend on the developer's environment picking a device.
os.environ.pop("CUDALINT_DEVICE", None)


@pytest.fixture
def chdir_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path

"""Fixtures shared by the engine's tests."""

from __future__ import annotations

import faulthandler
import sys

import pytest


@pytest.fixture
def quiet_crashes():
    """pytest's faulthandler, which worker processes inherit, would print the stack of each
    that crashes or aborts."""
    enabled = faulthandler.is_enabled()
    faulthandler.disable()
    yield
    if enabled:
        faulthandler.enable(sys.__stderr__)

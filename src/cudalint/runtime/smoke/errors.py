"""Why the harness could not run (exit 2): a one-line message, never a traceback."""

from __future__ import annotations


class HarnessError(Exception):
    """Bad TARGET, missing file or function, torch missing, unusable reference: exit 2."""

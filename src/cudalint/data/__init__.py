"""The data tables (TOML, JSON) the engine and the rules read, each read once."""

from __future__ import annotations

import sys
from functools import cache
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@cache
def load(name: str) -> dict[str, Any]:
    """The parsed `cudalint/data/<name>`."""
    return tomllib.loads(resources.files("cudalint.data").joinpath(name).read_text("utf-8"))

"""The data tables (TOML, JSON) the engine and the rules read, each read once."""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


FOLDER = Path(__file__).parent


@cache
def load(name: str) -> dict[str, Any]:
    """The parsed `cudalint/data/<name>` (TOML, or JSON by its name). Read beside this module:
    importlib.resources alone costs more start-up than every table."""
    text = (FOLDER / name).read_text("utf-8")
    return json.loads(text) if name.endswith(".json") else tomllib.loads(text)

"""Facts about the project being checked that rules need: its own packages (never reported
as CUDA-only libraries, as ruff's known-first-party) and its compiled CUDA extensions."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from cudalint.config import Config
from cudalint.engine.context import Settings
from cudalint.engine.setup_py import SetupFacts, read_setup


def settings_for(config: Config) -> Settings:
    setup = setup_facts(config.root)
    return Settings(
        helper_module=config.helper,
        target_torch=config.target_torch_tuple,
        first_party=(frozenset(config.known_first_party) | first_party_packages(config.root)
                     | setup.packages | pyproject_names(config.root)),
        extension_modules=setup.cuda_extensions,
    )


def first_party_packages(root: Path) -> frozenset[str]:
    """Top-level packages of the project's layout: `pkg/__init__.py` and `src/pkg/`."""
    names: set[str] = set()
    for base in (root, root / "src"):
        if not base.is_dir():
            continue
        for child in base.iterdir():
            if (child / "__init__.py").is_file():
                names.add(child.name)
            elif child.suffix == ".py" and base == root / "src":
                names.add(child.stem)
    return frozenset(names)


def setup_facts(root: Path) -> SetupFacts:
    """What the project's setup.py declares (read, never executed)."""
    try:
        text = (root / "setup.py").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return SetupFacts()
    return read_setup(text)


def extension_modules(root: Path) -> frozenset[str]:
    """Modules named by `CUDAExtension(...)` in the project's setup.py."""
    return setup_facts(root).cuda_extensions


def pyproject_names(root: Path) -> frozenset[str]:
    """The import name of the project's own distribution (`flash-attn` -> `flash_attn`)."""
    try:
        document = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return frozenset()
    names = [_get(document, "project", "name"), _get(document, "tool", "poetry", "name")]
    return frozenset(re.sub(r"[-.]+", "_", n).lower() for n in names if isinstance(n, str))


def _get(table: object, *keys: str) -> object:
    """`table[k1][k2]...`, or None where a level is missing or not a table."""
    for key in keys:
        if not isinstance(table, dict):
            return None
        table = table.get(key)
    return table

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
from cudalint.engine.reader import read_text
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
        try:
            children = list(base.iterdir()) if base.is_dir() else []
        except OSError:  # unreadable: the run reports the folder
            continue
        for child in children:
            if _is_package(child):
                names.add(child.name)
            elif child.suffix == ".py" and base == root / "src":
                names.add(child.stem)
    return frozenset(names)


def _is_package(folder: Path) -> bool:
    try:
        return (folder / "__init__.py").is_file()
    except OSError:
        return False


def setup_facts(root: Path) -> SetupFacts:
    """What the project's setup.py declares (read, never executed)."""
    text = read_text(root / "setup.py")
    return SetupFacts() if text is None else read_setup(text)


def extension_modules(root: Path) -> frozenset[str]:
    """Modules named by `CUDAExtension(...)` in the project's setup.py."""
    return setup_facts(root).cuda_extensions


def pyproject_names(root: Path) -> frozenset[str]:
    """The import name of the project's own distribution (`flash-attn` -> `flash_attn`)."""
    try:
        document = tomllib.loads(read_text(root / "pyproject.toml") or "")
    except (tomllib.TOMLDecodeError, RecursionError):
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

"""Facts about the project being checked that rules need: its own packages (never reported
as CUDA-only libraries, as ruff's known-first-party) and its compiled CUDA extensions."""

from __future__ import annotations

import re
from pathlib import Path

from cudalint.config import Config
from cudalint.engine.context import Settings

# CUDAExtension("pkg._C", ...) / CUDAExtension(name="pkg._C", ...) in setup.py
_EXTENSION = re.compile(r"CUDAExtension\(\s*(?:name\s*=\s*)?['\"]([\w.]+)['\"]")


def settings_for(config: Config) -> Settings:
    return Settings(
        helper_module=config.helper,
        target_torch=config.target_torch_tuple,
        first_party=frozenset(config.known_first_party) | first_party_packages(config.root),
        extension_modules=extension_modules(config.root),
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


def extension_modules(root: Path) -> frozenset[str]:
    """Modules named by `CUDAExtension(...)` in the project's setup.py."""
    setup = root / "setup.py"
    try:
        text = setup.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return frozenset()
    return frozenset(_EXTENSION.findall(text))

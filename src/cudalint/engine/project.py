"""Facts about the project being checked that rules need: its own packages (never reported
as CUDA-only libraries, as ruff's known-first-party) and its compiled CUDA extensions."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from cudalint.config import DEFAULT_TARGET_TORCH, Config, parse_version
from cudalint.engine.context import Settings
from cudalint.engine.setup_py import SetupFacts, read_setup
from cudalint.engine.torch_floor import torch_floor


def settings_for(config: Config) -> Settings:
    setup = setup_facts(config.root)
    return Settings(
        helper_module=config.helper,
        target_torch=target_torch(config, setup),
        first_party=(frozenset(config.known_first_party) | first_party_packages(config.root)
                     | setup.packages | pyproject_names(config.root)),
        extension_modules=setup.cuda_extensions,
    )


def target_torch(config: Config, setup: SetupFacts) -> tuple[int, int]:
    """The torch the fixes must work on: the `target-torch` setting, else the oldest torch the
    project's files allow, else DEFAULT_TARGET_TORCH (never the installed torch)."""
    return (config.target_torch_tuple or torch_floor(config.root, setup)
            or parse_version(DEFAULT_TARGET_TORCH))


_CUDA_METHOD = re.compile(rb"^[ \t]+def[ \t]+cuda[ \t]*\(", re.MULTILINE)


def defines_cuda_method(paths: Iterable[Path]) -> bool:
    """Whether a class in these Python files defines a `cuda` method (an indented
    `def cuda(`): a plain text scan, far cheaper than parsing."""
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if b"def" in data and _CUDA_METHOD.search(data):
            return True
    return False


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

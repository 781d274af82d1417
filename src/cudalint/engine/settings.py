"""The settings a rule may read and the project facts they come from: plain dataclasses, so
that a run which replays every file from the cache computes them without importing LibCST."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# The helper functions a fix may call, all defined beside pick_device in the helper module.
HELPER_MODULE_DEFAULT = "cudalint.device"


@dataclass
class Settings:
    """The parts of the configuration a rule may read."""

    helper_module: str = HELPER_MODULE_DEFAULT
    target_torch: tuple[int, int] = (2, 6)
    first_party: frozenset[str] = frozenset()
    extension_modules: frozenset[str] = frozenset()  # the project's own compiled CUDA extensions
    # A class of the checked tree defines its own `cuda` method: `x.cuda()` may be one of
    # them, so rewriting it to `.to(...)` is not safe.
    own_cuda_method: bool = False
    # Where the helper module's file goes when the run writes it (the standalone helper).
    helper_file: Path | None = None


@dataclass(frozen=True)
class SetupFacts:
    """What a project's setup.py declares (engine/setup_py.py reads it)."""

    cuda_extensions: frozenset[str] = frozenset()  # dotted module names
    packages: frozenset[str] = frozenset()  # top-level import names the project ships
    requires: tuple[str, ...] = ()  # install_requires and extras_require entries (literals)

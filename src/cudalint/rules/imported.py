"""Which modules an import brings in, and where to report each: shared by CUD201 and CUD305.

`from X import a, b` imports X itself and, where they are submodules, X.a and X.b: a match on
X is reported once at X, otherwise each matching X.a at its alias.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.walk.context import dotted_name as dotted

if TYPE_CHECKING:
    from cudalint.engine.walk.context import PythonContext

_DYNAMIC = frozenset({"importlib.import_module", "__import__"})


@dataclass(frozen=True)
class Imported:
    module: str  # dotted; relative imports keep their leading dots when unresolved
    node: cst.CSTNode  # where to report


def from_import(node: cst.Import, matches: Callable[[str], bool]) -> list[Imported]:
    found: dict[str, Imported] = {}
    for alias in node.names:
        module = dotted(alias.name)
        if matches(module):
            found.setdefault(module, Imported(module, alias))
    return list(found.values())


def from_import_from(
    node: cst.ImportFrom, base: str, matches: Callable[[str], bool]
) -> list[Imported]:
    """`base` is the absolute module the statement imports from (see `absolute_base`)."""
    if base and not base.endswith(".") and matches(base):
        return [Imported(base, node.module or node)]
    if isinstance(node.names, cst.ImportStar):
        return []
    found: dict[str, Imported] = {}
    for alias in node.names:
        name = dotted(alias.name)
        module = f"{base}{name}" if base.endswith(".") else f"{base}.{name}" if base else name
        if matches(module):
            found.setdefault(module, Imported(module, alias))
    return list(found.values())


def absolute_base(ctx: PythonContext, node: cst.ImportFrom) -> str:
    """The module `node` imports from; for a relative import, resolved from the file's package
    (`from . import _C` in pkg/ops.py: "pkg"), else kept relative ("." / ".ops")."""
    module = dotted(node.module)
    level = len(node.relative)
    if not level:
        return module
    package = package_of(ctx.path.resolve().parent) if ctx.path is not None else None
    parts = package.split(".") if package else []
    if level - 1 >= len(parts):
        return "." * level + module
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{module}" if module else base


@lru_cache(maxsize=1024)
def package_of(folder: Path) -> str | None:
    """The dotted package a folder is, from the `__init__.py` files above it."""
    parts: list[str] = []
    while (folder / "__init__.py").is_file():
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts)) or None


def dynamic_import(ctx: PythonContext, node: cst.Call) -> Imported | None:
    """`importlib.import_module("x")` / `__import__("x")` with a literal absolute name."""
    if ctx.call_name(node) not in _DYNAMIC or not node.args:
        return None
    first = node.args[0]
    if first.keyword is not None or not isinstance(first.value, cst.SimpleString):
        return None
    value = first.value.evaluated_value
    if not isinstance(value, str) or not value or value.startswith("."):
        return None
    return Imported(value, node)

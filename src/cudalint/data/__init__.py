"""The data tables (TOML, JSON) the engine and the rules read, each read once.

A parsed table is kept beside it, in `__pycache__`, as Python keeps a module's bytecode:
tomllib is pure Python, and parsing the tables (the MPS operator tables are 200 kB of JSON)
cost a small check more than anything else cudalint does at start-up. The copy carries the
size and modification time of the table it was made from and is used only while they match;
it is written only where bytecode may be (not under PYTHONDONTWRITEBYTECODE), and any failure
to read or write it only means parsing.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from typing import Any

FOLDER = Path(__file__).parent
_FORMAT = 1  # bump when the layout of a parsed copy changes


@cache
def load(name: str) -> dict[str, Any]:
    """The parsed `cudalint/data/<name>` (TOML, or JSON by its name; `name` may name a
    subfolder: `mps_ops/torch-2.13.0.json`). Read beside this module: importlib.resources
    alone costs more start-up than every table."""
    path = FOLDER / name
    stamp = _stamp(path)
    parsed = _parsed_copy(name, stamp)
    if parsed is None:
        text = path.read_text("utf-8")
        parsed = json.loads(text) if name.endswith(".json") else toml().loads(text)
        _keep(name, stamp, parsed)
    return parsed


def toml() -> ModuleType:
    """tomllib (tomli before Python 3.11), imported when a TOML text is first read: a run
    over a project without a pyproject.toml reads none."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


# Where a project's TOML holds an integer of more digits than int() converts (4,300: a
# quadratic conversion, CPython's guard), the number is read as this text followed by its
# line (`line 12`): TOML takes integers of 64 bits only, so no table means one, and another
# tool's table holding one spoils nothing of cudalint's (config.py refuses it in its own).
LONG_NUMBER = "\0cudalint: a number of more digits than int() converts: "
_BARE_NUMBER = r"((?:^|[=\[,{])[ \t\r\n]*)([+-]?[0-9][0-9_]{%d,})"


def load_toml(text: str) -> dict[str, Any]:
    """A project's TOML document (pyproject.toml, cudalint.toml): a BOM before it is read
    over, an integer too long for int() is a LONG_NUMBER text. tomllib.TOMLDecodeError or
    RecursionError where the text is not TOML."""
    tomllib = toml()
    text = text.removeprefix("\ufeff")
    try:
        document: dict[str, Any] = tomllib.loads(text)
        return document
    except ValueError as error:
        if isinstance(error, tomllib.TOMLDecodeError):
            raise
    import re

    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
    def as_text(found: re.Match[str]) -> str:
        row = text.count("\n", 0, found.start(2)) + 1
        return found.group(1) + json.dumps(f"{LONG_NUMBER}line {row}")

    document = tomllib.loads(re.sub(_BARE_NUMBER % limit, as_text, text, flags=re.MULTILINE))
    return document


def _stamp(path: Path) -> tuple[int, int, int]:
    status = path.stat()
    return _FORMAT, status.st_size, status.st_mtime_ns


def _copy_of(name: str) -> Path:
    flat = name.replace("/", ".")
    return FOLDER / "__pycache__" / f"{flat}.{sys.implementation.cache_tag}.marshal"


def _parsed_copy(name: str, stamp: tuple[int, int, int]) -> dict[str, Any] | None:
    try:
        kept = marshal.loads(_copy_of(name).read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not (isinstance(kept, tuple) and len(kept) == 2 and kept[0] == stamp
            and isinstance(kept[1], dict)):
        return None
    return kept[1]


def _keep(name: str, stamp: tuple[int, int, int], parsed: dict[str, Any]) -> None:
    if sys.dont_write_bytecode:
        return
    target = _copy_of(name)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        content = marshal.dumps((stamp, parsed))
        target.parent.mkdir(exist_ok=True)
        temporary.write_bytes(content)
        os.replace(temporary, target)  # a concurrent reader sees the old copy or the new one
    except (OSError, ValueError):  # read-only install; a value marshal cannot hold (dates)
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)

"""What the rules are, without importing them: `data/rule_index.json` lists every rule class
(code, module, class, the file kinds it reads). A run imports only the rule modules for the
kinds of the files it checks, and a run replayed from the cache imports none.

The file is generated from the rule modules themselves, with the rule pages: after adding or
changing a rule, run `python -m cudalint.docs docs/rules` (a test fails on a stale index).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudalint import data

if TYPE_CHECKING:
    from cudalint.kinds import FileKind
    from cudalint.rules.base import Rule

NAME = "rule_index.json"
_PYTHON_KINDS = ("python", "notebook")  # a PythonRule reads Python files and notebook cells


@cache
def entries() -> tuple[dict[str, Any], ...]:
    """The index, in the registry's order (by code, each code's primary class first)."""
    return tuple(data.load(NAME)["rules"])


def codes() -> frozenset[str]:
    return frozenset(entry["code"] for entry in entries())


def entries_for(kinds: Iterable[FileKind]) -> list[dict[str, Any]]:
    """The entries of the rules that read one of `kinds`, in the registry's order."""
    wanted = {kind.value for kind in kinds}
    return [e for e in entries() if wanted.intersection(e["kinds"])]


def entry_of(rule: type[Rule]) -> dict[str, Any]:
    from cudalint.kinds import FileKind
    from cudalint.rules.base import FileRule, PythonRule

    kinds: list[str] = []
    if issubclass(rule, PythonRule):
        kinds = list(_PYTHON_KINDS)
    elif issubclass(rule, FileRule):
        kinds = sorted(FileKind(kind).value for kind in rule.file_kinds)
    return {"code": rule.code, "module": rule.__module__, "class": rule.__qualname__,
            "kinds": kinds}


def generated() -> str:
    """The index as the rule modules define it today: one rule a line."""
    from cudalint.rules import all_rules

    lines = ",\n".join(f"  {json.dumps(entry_of(rule))}" for rule in all_rules())
    return f'{{"rules": [\n{lines}\n]}}\n'


def path() -> Path:
    return Path(data.__file__).with_name(NAME)


def write() -> None:
    path().write_text(generated(), encoding="utf-8")

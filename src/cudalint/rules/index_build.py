"""`data/rule_index.json` generated from the rule modules themselves (cudalint.rules.index
reads it): `python -m cudalint.docs docs/rules` writes it with the rule pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudalint import data
from cudalint.codes import INDEX

if TYPE_CHECKING:
    from cudalint.engine.contract import Rule

_PYTHON_KINDS = ("python", "notebook")  # a PythonRule reads Python files and notebook cells


def entry_of(rule: type[Rule]) -> dict[str, Any]:
    from cudalint.engine.contract import FileRule, PythonRule
    from cudalint.kinds import FileKind

    kinds: list[str] = []
    entry: dict[str, Any] = {"code": rule.code, "module": rule.__module__,
                             "class": rule.__qualname__}
    if issubclass(rule, PythonRule):
        kinds = list(_PYTHON_KINDS)
        entry["terms"] = _static_terms(rule)
    elif issubclass(rule, FileRule):
        kinds = sorted(FileKind(kind).value for kind in rule.file_kinds)
    return {**entry, "kinds": kinds}


def _static_terms(rule: type[Rule]) -> dict[str, list[Any]] | None:
    """The rule's prefilter terms, or None where they depend on the settings."""
    from cudalint.engine.settings import Settings

    if rule.settings_terms:
        return None
    plain = rule.prefilter(Settings())
    other = rule.prefilter(Settings(helper_module="x._device", target_torch=(1, 8),
                                    first_party=frozenset({"x"}),
                                    extension_modules=frozenset({"x._C"}),
                                    own_cuda_method=True))
    if plain != other:
        raise ValueError(f"{rule.__qualname__}.prefilter() reads the settings: set "
                         f"settings_terms = True")
    found: dict[str, list[Any]] = {"keywords": list(plain.keywords), "words": sorted(plain.words),
                                   "calls": sorted(plain.calls)}
    if plain.patterns:
        found["patterns"] = list(plain.patterns)
    if plain.together:
        found["together"] = [list(group) for group in plain.together]
    return found


def generated() -> str:
    """The index as the rule modules define it today: one rule a line."""
    from cudalint.rules import all_rules

    lines = ",\n".join(f"  {json.dumps(entry_of(rule))}" for rule in all_rules())
    return f'{{"rules": [\n{lines}\n]}}\n'


def path() -> Path:
    return Path(data.__file__).with_name(INDEX)


def write() -> None:
    path().write_text(generated(), encoding="utf-8")

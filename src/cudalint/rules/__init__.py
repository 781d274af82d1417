"""The rule registry. Dropping a module with a Rule subclass into a family package registers it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterable
from functools import cache

from cudalint.rules.base import FileRule, PythonRule, Rule

__all__ = ["FileRule", "PythonRule", "Rule", "all_rules", "rule_by_code", "select"]


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class with a code, sorted by code."""
    found: dict[str, type[Rule]] = {}
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Rule) and "code" in obj.__dict__:
                found[obj.code] = obj
    return tuple(found[code] for code in sorted(found))


def rule_by_code(code: str) -> type[Rule] | None:
    return next((rule for rule in all_rules() if rule.code == code.upper()), None)


def is_known_selector(selector: str) -> bool:
    """`CUD`, `CUD1`, `CUD10`, `CUD101`: a prefix of at least one code, or `ALL`."""
    selector = selector.upper()
    return selector == "ALL" or any(rule.code.startswith(selector) for rule in all_rules())


def select(selectors: Iterable[str], ignores: Iterable[str]) -> tuple[type[Rule], ...]:
    """Rules matching a `select` prefix and no `ignore` prefix; the longer prefix wins, as in ruff."""
    chosen = []
    selectors = [s.upper() for s in selectors]
    ignores = [s.upper() for s in ignores]
    for rule in all_rules():
        best_select = _longest_match(rule.code, selectors)
        best_ignore = _longest_match(rule.code, ignores)
        if best_select > best_ignore:
            chosen.append(rule)
    return tuple(chosen)


def _longest_match(code: str, prefixes: list[str]) -> int:
    """How specific the best matching prefix is: its length, 0 for ALL, -1 for none."""
    strengths = [0 if p == "ALL" else len(p) for p in prefixes if p == "ALL" or code.startswith(p)]
    return max(strengths, default=-1)

"""The rule registry. Dropping a module with a Rule subclass into a family package registers it.

A code may span file kinds (CUD501 in shell scripts and in Python), so several classes may share
it: all of them run, and the one with `primary = True` names and documents the code.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from cudalint.rules.base import FileRule, PythonRule, Rule

__all__ = ["FileRule", "PythonRule", "Rule", "Selection", "all_rules", "primary_rules",
           "rule_by_code", "select"]


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class with a code, sorted by code; for each code the primary class first."""
    found: dict[str, type[Rule]] = {}
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Rule) and "code" in obj.__dict__:
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return tuple(sorted(found.values(),
                        key=lambda r: (r.code, not r.primary, r.__module__, r.__qualname__)))


@cache
def primary_rules() -> tuple[type[Rule], ...]:
    """One class per code, the one that documents it: for docs, `rule --all`, SARIF."""
    chosen: dict[str, type[Rule]] = {}
    for rule in all_rules():
        chosen.setdefault(rule.code, rule)
    return tuple(chosen.values())


def rule_by_code(code: str) -> type[Rule] | None:
    return next((rule for rule in primary_rules() if rule.code == code.upper()), None)


def is_known_selector(selector: str) -> bool:
    """`CUD`, `CUD1`, `CUD10`, `CUD101`: a prefix of at least one code, or `ALL`."""
    selector = selector.upper()
    return selector == "ALL" or any(rule.code.startswith(selector) for rule in primary_rules())


@dataclass(frozen=True)
class Selection:
    """One source's choice of rules: its `select` (None: it keeps what came before), its
    `extend-select` and its `ignore`."""

    select: Sequence[str] | None
    extend_select: Sequence[str] = ()
    ignore: Sequence[str] = ()


def select(sources: Iterable[Selection]) -> tuple[type[Rule], ...]:
    """The rules the sources choose, lowest priority first (the configuration, then the
    command line), as ruff resolves them: a source with a `select` starts the set afresh,
    one without adds its `extend-select` and removes its `ignore` from the set before it.
    Within a source the longest matching prefix decides, and `ignore` wins a tie."""
    enabled: set[str] = set()
    for source in sources:
        chosen = [s.upper() for s in [*(source.select or []), *source.extend_select]]
        ignored = [s.upper() for s in source.ignore]
        decided = {rule.code: on for rule in primary_rules()
                   if (on := _decision(rule.code, chosen, ignored)) is not None}
        if source.select is not None:
            enabled.clear()
        enabled |= {code for code, on in decided.items() if on}
        enabled -= {code for code, on in decided.items() if not on}
    return tuple(rule for rule in all_rules() if rule.code in enabled)


def _decision(code: str, chosen: list[str], ignored: list[str]) -> bool | None:
    """Whether a source enables (True) or disables (False) `code`, or says nothing of it."""
    best_select = _longest_match(code, chosen)
    best_ignore = _longest_match(code, ignored)
    if best_select < 0 and best_ignore < 0:
        return None
    return best_select > best_ignore


def _longest_match(code: str, prefixes: list[str]) -> int:
    """How specific the best matching prefix is: its length, 0 for ALL, -1 for none."""
    strengths = [0 if p == "ALL" else len(p) for p in prefixes if p == "ALL" or code.startswith(p)]
    return max(strengths, default=-1)

"""The rule registry. Dropping a module with a Rule subclass into a family package registers it.

A code may span file kinds (CUD501 in shell scripts and in Python), so several classes may share
it: all of them run, and the one with `primary = True` names and documents the code.
"""

from __future__ import annotations

from functools import cache

from cudalint.rules import index

# The commands hand this registry to every run (engine.contract.Catalogue); a run replayed
# from the cache selects no rule, so importing it costs no more than the index's file: each
# module below (importlib, inspect, typing) is imported where it is needed.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from types import ModuleType

    from cudalint.config import Selection
    from cudalint.engine.contract import Rule
    from cudalint.kinds import FileKind

__all__ = ["all_rules", "for_kinds", "primary_rules", "rule_by_code", "select"]


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class with a code, sorted by code; for each code the primary class first."""
    import importlib
    import pkgutil  # a run imports the rules it needs by name (for_kinds)

    modules = (importlib.import_module(info.name)
               for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."))
    return _rules_in(modules)


def for_kinds(kinds: Iterable[FileKind],
              texts: Sequence[bytes] | None = None) -> tuple[type[Rule], ...]:
    """The rules that read files of these kinds, in the registry's order, importing only
    their modules (rules/index.py): a run of Python files alone loads none of the parsers of
    requirements, YAML or binaries. With `texts` (every file to check, all Python), only the
    rules whose terms one of them names."""
    import importlib

    return tuple(getattr(importlib.import_module(entry["module"]), entry["class"])
                 for entry in index.entries_for(kinds, texts))


def _rules_in(modules: Iterable[ModuleType]) -> tuple[type[Rule], ...]:
    import inspect

    from cudalint.engine.contract import Rule

    found: dict[str, type[Rule]] = {}
    for module in modules:
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


def select(sources: Iterable[Selection],
           rules: Iterable[type[Rule]] | None = None) -> tuple[type[Rule], ...]:
    """The rules (of `rules`, else all) the sources choose, lowest priority first (the
    configuration, then the command line), as ruff resolves them: a source with a `select`
    starts the set afresh, one without adds its `extend-select` and removes its `ignore` from
    the set before it. Within a source the longest matching prefix decides, `ignore` a tie."""
    candidates = all_rules() if rules is None else tuple(rules)
    codes = dict.fromkeys(rule.code for rule in candidates)
    enabled: set[str] = set()
    for source in sources:
        chosen = [s.upper() for s in [*(source.select or []), *source.extend_select]]
        ignored = [s.upper() for s in source.ignore]
        decided = {code: on for code in codes
                   if (on := _decision(code, chosen, ignored)) is not None}
        if source.select is not None:
            enabled.clear()
        enabled |= {code for code, on in decided.items() if on}
        enabled -= {code for code, on in decided.items() if not on}
    return tuple(rule for rule in candidates if rule.code in enabled)


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

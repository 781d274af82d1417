"""The rule codes that exist, read from `data/rule_index.json` without importing a rule: what
a selector (`--select CUD1`, `ignore = ["CUD403"]`) may name. The configuration checks its
selectors here; the rules' index (cudalint.rules.index) reads the same file for the rest."""

from __future__ import annotations

from functools import cache

from cudalint import data

TYPE_CHECKING = False  # typing's, without importing typing (a run replayed from the cache)
if TYPE_CHECKING:
    from typing import Any

INDEX = "rule_index.json"


@cache
def entries() -> tuple[dict[str, Any], ...]:
    """The index, in the registry's order (by code, each code's primary class first)."""
    return tuple(data.load(INDEX)["rules"])


def codes() -> frozenset[str]:
    return frozenset(entry["code"] for entry in entries())


def is_known_selector(selector: str) -> bool:
    """`CUD`, `CUD1`, `CUD10`, `CUD101`: a prefix of at least one code, or `ALL`."""
    selector = selector.upper()
    return selector == "ALL" or any(code.startswith(selector) for code in codes())

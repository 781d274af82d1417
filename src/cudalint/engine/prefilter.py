"""The cheap test that decides whether a file is worth parsing at all.

Each rule names substrings (`keywords`), one of which a file must contain for the rule to find
anything, and may name whole identifiers (`words`) instead, for names that occur inside other
words (`mode` in `model`, `put` in `input`). A file that matches no enabled rule is not parsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cudalint.engine.context import Settings
    from cudalint.rules.base import Rule

_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Prefilter:
    substrings: tuple[bytes, ...]
    words: frozenset[bytes] = frozenset()

    @classmethod
    def for_rules(cls, rules: Iterable[type[Rule]], settings: Settings) -> Prefilter:
        substrings: dict[bytes, None] = {}
        words: set[bytes] = set()
        for rule in rules:
            keywords, identifiers = rule.prefilter(settings)
            substrings.update(dict.fromkeys(k.encode() for k in keywords))
            words.update(w.encode() for w in identifiers)
        return cls(tuple(substrings), frozenset(words))

    def matches(self, data: bytes) -> bool:
        if any(keyword in data for keyword in self.substrings):
            return True
        return bool(self.words) and not self.words.isdisjoint(_IDENTIFIER.findall(data))

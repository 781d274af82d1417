"""`Prefilter.within` as it was written before its cheap necessary conditions: every substring
scanned, every pattern searched over the whole text. The oracle its fast path must agree with."""

from __future__ import annotations

import re
from functools import lru_cache

from cudalint.engine.first_pass.prefilter import Prefilter, identifiers


def within(prefilter: Prefilter, data: bytes) -> Prefilter | None:
    """This pre-filter with only the terms `data` names; None when it names none."""
    substrings = tuple(keyword for keyword in prefilter.substrings if keyword in data)
    found = identifiers(data) if prefilter.words or prefilter.calls else set()
    words, calls = prefilter.words & found, prefilter.calls & found
    patterns = tuple(p for p in prefilter.patterns if _regex(p).search(data))
    together = tuple(group for group in prefilter.together
                     if all(_regex(p).search(data) for p in group))
    if not substrings and not words and not calls and not patterns and not together:
        return None
    return Prefilter(substrings, frozenset(words), frozenset(calls), patterns, together,
                     prefilter.quiet & (words | calls), prefilter._all_calls,
                     prefilter._followers)


@lru_cache(maxsize=256)
def _regex(pattern: bytes) -> re.Pattern[bytes]:
    return re.compile(pattern)

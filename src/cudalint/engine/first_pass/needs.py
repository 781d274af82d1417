"""What a text must hold for a regular expression to match it somewhere: a necessary condition
read once from the expression's parse, cheap enough to check before each search.

The expression is expanded into its paths (a branch gives one path per alternative, an optional
part one with and one without it); a path is a row of single bytes, each of a set of values,
with whatever it cannot follow (a repeat that may be empty, a backreference) as a gap, and its
look-arounds placed between. A path needs each run of its literal bytes (a letter in either
case counts as one: `[lL]`) as a substring, and as a whole identifier where the bytes around
the run, or a look-around, show it cannot continue an identifier on either side (`word` in
cudalint.engine.first_pass.prefilter writes `load(?<![A-Za-z0-9_]load)(?![A-Za-z0-9_])`). A text
must meet every need of one of the paths; an expression with a path that needs nothing has no
condition, and is searched every time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

try:
    from re import _parser as sre  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_parse as sre  # type: ignore[no-redef]

_ALL = frozenset(range(256))
_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789")
_DIGITS = frozenset(b"0123456789")
_SPACE = frozenset(b" \t\n\r\f\v")
_CATEGORIES = {sre.CATEGORY_DIGIT: _DIGITS, sre.CATEGORY_NOT_DIGIT: _ALL - _DIGITS,
               sre.CATEGORY_SPACE: _SPACE, sre.CATEGORY_NOT_SPACE: _ALL - _SPACE,
               sre.CATEGORY_WORD: _WORD, sre.CATEGORY_NOT_WORD: _ALL - _WORD}
_REPEATS = tuple(getattr(sre, name) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
                 if hasattr(sre, name))
_ATOMIC = getattr(sre, "ATOMIC_GROUP", None)
# More paths than this and a part is read as a gap (each path costs a check per text).
_LIMIT = 256


class _Gap:
    """Whatever a part of the path matches, of any length."""


GAP = _Gap()


@dataclass(frozen=True)
class _Look:
    """A look-around: `behind` or ahead, `negated` or not, over the paths of its expression."""

    behind: bool
    negated: bool
    paths: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class _Boundary:
    """`\\b`."""


_BOUNDARY = _Boundary()

# A path: byte sets (frozenset[int]), gaps and look-arounds.
Path = tuple[Any, ...]


class Need(NamedTuple):
    """A substring (`word` False) or a whole identifier (`word` True) a text must hold, in
    either case of its ASCII letters where `caseless`."""

    text: bytes
    word: bool = False
    caseless: bool = False


# The needs of each path, one of which a text must meet all of; None: no condition.
Needs = tuple[tuple[Need, ...], ...] | None


@dataclass(frozen=True)
class Guard:
    """An expression's needs (`needs_of`) by the first need of each path, so that the paths
    whose first need is a whole identifier the text lacks are ruled out with one set
    intersection: `words` (in their case) and `caseless` (in lower case) map each first need
    to the rest of the needs of each path it starts; `others` are the paths that start with
    a substring."""

    words: dict[bytes, tuple[tuple[Need, ...], ...]]
    caseless: dict[bytes, tuple[tuple[Need, ...], ...]]
    others: tuple[tuple[Need, ...], ...]
    word_set: frozenset[bytes]
    caseless_set: frozenset[bytes]


@lru_cache(maxsize=512)
def guard_of(pattern: bytes) -> Guard | None:
    """What a text must hold for `pattern` to match it, as `Guard`; None: nothing."""
    needs = needs_of(pattern)
    if needs is None:
        return None
    words: dict[bytes, list[tuple[Need, ...]]] = {}
    caseless: dict[bytes, list[tuple[Need, ...]]] = {}
    others = []
    for first, *rest in needs:
        if not first.word:
            others.append((first, *rest))
            continue
        (caseless if first.caseless else words).setdefault(first.text, []).append(tuple(rest))
    return Guard({k: tuple(v) for k, v in words.items()},
                 {k: tuple(v) for k, v in caseless.items()},
                 tuple(others), frozenset(words), frozenset(caseless))


@lru_cache(maxsize=512)
def needs_of(pattern: bytes) -> Needs:
    """What a text must hold for `pattern` (a bytes regular expression, compiled without
    flags) to match it."""
    try:
        parsed = sre.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    flags = parsed.state.flags
    if flags & (re.IGNORECASE | re.LOCALE):
        return None
    found: list[tuple[Need, ...]] = []
    for path in _paths(parsed, bool(flags & re.DOTALL)):
        rows = _settled(path)
        if rows is None:
            continue  # a path no text can match
        needs = _needs(*rows)
        if not needs:
            return None
        found.append(tuple(sorted(needs, key=_cost)))
    return _weakest(found)


def _cost(need: Need) -> int:
    """Whole identifiers first (a look-up), then identifier-like substrings (a scan of the
    text's identifiers), then the others (a scan of the text)."""
    return 0 if need.word else 1 if identifier_like(need.text) else 2


def identifier_like(text: bytes) -> bool:
    """`text` holds identifier bytes only, the first no digit: it is in a text exactly where it
    is in one of the text's identifiers."""
    return bool(text) and text[0] not in _DIGITS and not set(text) - _WORD


def _weakest(found: list[tuple[Need, ...]]) -> tuple[tuple[Need, ...], ...]:
    """`found` without a path whose needs hold wherever another's do."""
    kept: dict[tuple[Need, ...], frozenset[Need]] = {}
    for needs in sorted(dict.fromkeys(found), key=len):
        mine = frozenset(needs)
        if not any(other <= mine for other in kept.values()):
            kept[needs] = mine
    return tuple(kept)


def _paths(items: Iterable[tuple[Any, Any]], dotall: bool) -> list[Path]:
    paths: list[Path] = [()]
    for op, av in items:
        options = _options(op, av, dotall)
        if len(paths) * len(options) > _LIMIT:
            options = [(GAP,)]
        paths = [path + option for path in paths for option in options]
    return paths


def _options(op: Any, av: Any, dotall: bool) -> list[Path]:
    """The paths of one part of an expression."""
    if op is sre.LITERAL:
        return [(frozenset((av,)),)]
    if op is sre.NOT_LITERAL:
        return [(_ALL - {av},)]
    if op is sre.ANY:
        return [(_ALL if dotall else _ALL - {10},)]
    if op is sre.IN:
        return [(_charset(av),)]
    if op is sre.BRANCH:
        return _alternatives(av[1], dotall)
    if op is sre.SUBPATTERN:
        return _group(av, dotall)
    if op in _REPEATS:
        return _repeat(av, dotall)
    if op is _ATOMIC:  # matches less than its expression alone would
        return _paths(av, dotall)
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        direction, expression = av
        return [(_Look(direction < 0, op is sre.ASSERT_NOT,
                       tuple(_paths(expression, dotall))),)]
    if op is sre.AT:
        return [(_BOUNDARY,)] if av is sre.AT_BOUNDARY else [()]
    return [(GAP,)]


def _alternatives(alternatives: Sequence[Any], dotall: bool) -> list[Path]:
    found: list[Path] = []
    for alternative in alternatives:
        found.extend(_paths(alternative, dotall))
        if len(found) > _LIMIT:
            return [(GAP,)]
    return found


def _group(av: Any, dotall: bool) -> list[Path]:
    _, add, remove, expression = av
    if add & (re.IGNORECASE | re.LOCALE):
        return [(GAP,)]
    inner = (dotall or bool(add & re.DOTALL)) and not remove & re.DOTALL
    return _paths(expression, inner)


def _repeat(av: Any, dotall: bool) -> list[Path]:
    least, most, expression = av
    if least == 0 and most == 1:
        return [(), *_paths(expression, dotall)]
    if least == 0:
        return [(GAP,)]
    once = _paths(expression, dotall)
    return once if most == 1 else [(*path, GAP) for path in once]


def _charset(items: Iterable[tuple[Any, Any]]) -> frozenset[int]:
    found: set[int] = set()
    negate = False
    for op, av in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            found.add(av)
        elif op is sre.RANGE:
            found.update(range(av[0], av[1] + 1))
        elif op is sre.CATEGORY and av in _CATEGORIES:
            found |= _CATEGORIES[av]
        else:
            return _ALL
    return _ALL - found if negate else frozenset(found)


# A path as its bytes (sets, gaps) with, at each place between two of them (0 before the
# first), the bytes known not to be just before (`not_before`) or just after (`not_after`).
Rows = tuple[list[Any], list[frozenset[int]], list[frozenset[int]]]


def _settled(path: Path) -> Rows | None:
    """The bytes of `path`, narrowed by its look-arounds; None where one cannot hold."""
    row: list[Any] = []
    marks: list[tuple[int, Any]] = []
    for item in path:
        if isinstance(item, (_Look, _Boundary)):
            marks.append((len(row), item))
        else:
            row.append(item)
    not_before = [frozenset[int]()] * (len(row) + 1)
    not_after = [frozenset[int]()] * (len(row) + 1)
    for place, mark in marks:  # first what narrows the bytes, then what they rule out
        if isinstance(mark, _Look) and not mark.negated and not _narrow(row, place, mark):
            return None
    for place, mark in marks:
        if isinstance(mark, _Boundary):
            _boundary(row, place, not_before, not_after)
        elif mark.negated:
            for inner in mark.paths:
                _exclude(row, place, mark.behind, inner, not_before, not_after)
    for place in range(len(row)):
        if isinstance(row[place], frozenset):
            row[place] = row[place] - not_after[place] - not_before[place + 1]
            if not row[place]:
                return None
    return row, not_before, not_after


def _fixed(path: Path) -> bool:
    return all(isinstance(item, frozenset) for item in path)


def _narrow(row: list[Any], place: int, look: _Look) -> bool:
    """Narrow the bytes a positive look-around of one fixed path covers; False where they
    cannot hold."""
    if len(look.paths) != 1 or not _fixed(look.paths[0]):
        return True
    inner = look.paths[0]
    start = place - len(inner) if look.behind else place
    covered = tuple(row[max(start, 0):start + len(inner)])
    if start < 0 or len(covered) < len(inner) or not _fixed(covered):
        return True
    for offset, allowed in enumerate(inner):
        row[start + offset] = row[start + offset] & allowed
        if not row[start + offset]:
            return False
    return True


def _exclude(row: list[Any], place: int, behind: bool, inner: Path,
             not_before: list[frozenset[int]], not_after: list[frozenset[int]]) -> None:
    """A negative look-around over one fixed path: where the path's own bytes always match all
    but its farthest byte, that byte is known not to be there."""
    if not inner or not _fixed(inner):
        return
    near = inner[1:] if behind else inner[:-1]
    start = place - len(near) if behind else place
    if start < 0 or start + len(near) > len(row):
        return
    covered = row[start:start + len(near)]
    if not all(isinstance(mine, frozenset) and mine <= theirs
               for mine, theirs in zip(covered, near, strict=True)):
        return
    if behind:
        not_before[start] |= inner[0]
    else:
        not_after[start + len(near)] |= inner[-1]


def _boundary(row: list[Any], place: int, not_before: list[frozenset[int]],
              not_after: list[frozenset[int]]) -> None:
    if place > 0 and isinstance(row[place - 1], frozenset) and row[place - 1] <= _WORD:
        not_after[place] |= _WORD
    if place < len(row) and isinstance(row[place], frozenset) and row[place] <= _WORD:
        not_before[place] |= _WORD


def _needs(row: list[Any], not_before: list[frozenset[int]],
           not_after: list[frozenset[int]]) -> tuple[Need, ...]:
    """The needs of a settled path: its runs of literal bytes, and the identifiers in them
    that nothing around can continue."""
    found: dict[Need, None] = {}
    start = 0
    while start < len(row):
        if _literal(row[start]) is None:
            start += 1
            continue
        end = start
        while end < len(row) and _literal(row[end]) is not None:
            end += 1
        for need in _run_needs(row, start, end, not_before, not_after):
            found[need] = None
        start = end
    return tuple(found)


def _literal(item: Any) -> tuple[int, bool] | None:
    """The byte of a set of one byte, or of one ASCII letter in either case (True)."""
    if not isinstance(item, frozenset) or len(item) > 2:
        return None
    if len(item) == 1:
        return next(iter(item)), False
    low, high = sorted(item)
    if 65 <= low <= 90 and high == low + 32:
        return high, True
    return None


def _run_needs(row: list[Any], start: int, end: int, not_before: list[frozenset[int]],
               not_after: list[frozenset[int]]) -> Iterable[Need]:
    literals = [found for item in row[start:end] if (found := _literal(item)) is not None]
    text = bytes(value for value, _ in literals)
    caseless = any(folded for _, folded in literals)
    whole = False
    position = start
    while position < end:
        if row[position] - _WORD:
            position += 1
            continue
        last = position
        while last < end and not row[last] - _WORD:
            last += 1
        if _word_edge(row, position, not_before, before=True) \
                and _word_edge(row, last, not_after, before=False) \
                and text[position - start] not in _DIGITS:
            part = literals[position - start:last - start]
            yield _need(text[position - start:last - start], True,
                        any(folded for _, folded in part))
            whole = whole or (position, last) == (start, end)
        position = last
    if not whole:
        yield _need(text, False, caseless)


def _need(text: bytes, word: bool, caseless: bool) -> Need:
    """A need, its text in lower case where its case does not count (`Need.caseless`)."""
    return Need(text.lower() if caseless else text, word, caseless)


def _word_edge(row: list[Any], place: int, known: list[frozenset[int]], before: bool) -> bool:
    """No identifier byte stands just before (or after) `place`."""
    if known[place] >= _WORD:
        return True
    near = place - 1 if before else place
    if near < 0 or near >= len(row):
        return False
    return isinstance(row[near], frozenset) and not row[near] & _WORD

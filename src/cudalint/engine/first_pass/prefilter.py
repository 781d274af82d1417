"""The cheap test that decides whether a file is worth parsing at all, and which of its
functions (cudalint.engine.first_pass.outline) LibCST must read.

Each rule names what its findings must contain (`Terms`): substrings (`keywords`), whole
identifiers (`words`, for names that occur inside other words: `mode` in `model`, `put` in
`input`), and identifiers that only count where they are called (`calls`: `x.mode(dim=1)`, not
`self.mode = mode`), regular expressions (`patterns`: an integer after `.to(`, with whatever
blanks, comments and parentheses Python allows in between), and conjunctions of them
(`together`: `local_rank` counts only where the same text names `to` or `device`). A file
that matches no enabled rule is not parsed. A function matches on
its code alone: its docstrings, other bare strings and comments are prose, where no rule
reports anything.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from cudalint.engine.first_pass.needs import Need, guard_of, identifier_like

if TYPE_CHECKING:
    from typing import Protocol

    from cudalint.engine.settings import Settings

    class Rule(Protocol):
        """What the first pass asks of a rule class (cudalint.engine.contract.Rule): its terms
        under the settings. Named here, not imported: the contract sits above the first pass."""

        def prefilter(self, settings: Settings) -> Terms: ...

_DIGITS = b"0123456789"
_WORD_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_" + _DIGITS
# Every byte as itself where an identifier may hold it, else as a blank (for `identifiers`).
_BLANKS = bytes(c if c in _WORD_BYTES else 32 for c in range(256))
# A string (kept) or a comment (dropped), scanning from the start of a statement.
_STRING_OR_COMMENT = re.compile(
    rb"(?P<string>'''(?:[^'\\]|\\.|'(?!''))*'''"
    rb'|"""(?:[^"\\]|\\.|"(?!""))*"""'
    rb"|'(?:[^'\\\r\n]|\\.)*'"
    rb'|"(?:[^"\\\r\n]|\\.)*")'
    rb"|\#[^\r\n]*",
    re.DOTALL,
)
# From Python 3.12 an f-string may hold its own quotes (`f"{d["k"]}"`), which the pattern
# above does not follow: such functions keep their comments.
_NESTING_FSTRINGS = sys.version_info >= (3, 12)
_FSTRING = re.compile(rb"(?<![A-Za-z0-9_])[rRbB]?[fFtT][rRbB]?['\"]")
# The fields of an `ast` statement that hold blocks of statements.
BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
# An escape that can put an identifier's letters into a string's value (`\x74`, `\u0074`,
# `\N{...}`, octal), or a backslash-newline that joins two parts of one.
LETTER_ESCAPE = re.compile(r"\\[xuUN0-7\r\n]")


# What may stand between two tokens of a statement: blanks, line breaks (inside brackets), a
# comment, a backslash-newline. For the `patterns` of the rules' terms. A comment runs to the
# end of its line: read any other way, a line of `#`s splits in exponentially many ways.
GAP = r"(?:[ \t\f\r\n]|\\(?:\r\n|\r|\n)|#[^\r\n]*(?![^\r\n]))*"
# The non-ASCII letters `re.IGNORECASE` takes for an ASCII one in a str pattern (the Kelvin
# sign is a `k`): an identifier may hold them.
_FOLDS = {"i": "\u0130\u0131", "k": "\u212a", "s": "\u017f"}


_IDENTIFIER_CHAR = "[A-Za-z0-9_]"


def word(name: str) -> str:
    """A pattern for `name` as a whole identifier. It starts with the name itself, which
    `re` finds many times faster than a pattern starting with a look-behind."""
    escaped = re.escape(name)
    return rf"{escaped}(?<!{_IDENTIFIER_CHAR}{escaped})(?!{_IDENTIFIER_CHAR})"


def caseless_word(alternatives: Iterable[str]) -> str:
    """A pattern for a whole identifier that one of `alternatives` (patterns whose letters are
    all literal, each starting with a letter) matches in any case, as they would with
    `re.IGNORECASE` in a str pattern. It starts with one character class (an alternation at
    the start is three times slower)."""
    parts: dict[str, list[str]] = {}
    for alternative in alternatives:
        head = alternative[0].lower()
        if not "a" <= head <= "z" or head in _FOLDS:
            raise ValueError(f"{alternative!r} must start with an ASCII letter that only "
                             "folds to ASCII")
        parts.setdefault(head, []).append(caseless(alternative[1:]))
    heads = "".join(head + head.upper() for head in parts)
    rests = "|".join(f"(?<=[{head}{head.upper()}])(?:{'|'.join(rest)})"
                     for head, rest in parts.items())
    return rf"[{heads}](?<!{_IDENTIFIER_CHAR}.)(?:{rests})(?!{_IDENTIFIER_CHAR})"


def caseless(pattern: str) -> str:
    """`pattern`, whose letters are all literal ASCII ones, matching them in any case as a str
    pattern with `re.IGNORECASE` does (the terms are matched against UTF-8 bytes, where that
    flag folds ASCII alone)."""
    parts = []
    for char in pattern:
        if not ("a" <= char.lower() <= "z"):
            parts.append(char)
            continue
        folds = "|".join(_FOLDS.get(char.lower(), ""))
        pair = f"[{char.lower()}{char.upper()}]"
        parts.append(f"(?:{pair}|{folds})" if folds else pair)
    return "".join(parts)


# What a probe names besides the word `cuda` (the terms of the rules that read probes): a
# flag (walk.guards.names_cuda_flag: `use_cuda`, `USE_CUDA`, `CUDA_AVAILABLE`, `Cuda`) or
# `x.is_cuda`. It starts with one character class, as caseless_word's patterns do.
PROBE_PATTERN = (
    rf"[uUhHcC](?<![A-Za-z0-9_].)(?:(?<=[uU]){caseless('se_cuda')}|(?<=[hH]){caseless('as_cuda')}"
    rf"|(?<=[cC]){caseless('uda')}(?:{caseless('_avail')}|(?![A-Za-z0-9_])))"
    rf"|{word('is_cuda')}"
)


def may_spell(text: str, name: str) -> bool:
    """Whether `text` may spell `name`: written out, or in a string through an escape."""
    return name in text or LETTER_ESCAPE.search(text) is not None


@dataclass(frozen=True)
class Terms:
    """What a rule's findings name, one of which a text must contain for the rule to find
    anything there: `keywords` (substrings), `words` (whole identifiers), `calls` (whole
    identifiers that count only where they are called, or where the text imports something),
    `patterns` (regular expressions, matched against the text's UTF-8 bytes) and `together`
    (groups of patterns that count where the same text matches each of them)."""

    keywords: tuple[str, ...] = ()
    words: frozenset[str] = frozenset()
    calls: frozenset[str] = frozenset()
    patterns: tuple[str, ...] = ()
    together: tuple[tuple[str, ...], ...] = ()
    # Words and calls of the rule's own that it reports on the statement naming them, and that
    # make none of the names that statement binds worth following (CUD201's package roots:
    # the import is the finding): what `from cutlass import Float32` binds is no trigger.
    quiet: frozenset[str] = frozenset()
    # What a function naming none of these terms, only a name that a statement naming them
    # binds, must also name for the rule to report there (patterns, one of which its code or
    # that statement must match): CUD601 reports a float64 that reaches a device, which a
    # function naming `np` and no device, no dtype, cannot make. None: nothing more.
    follow: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Follower:
    """The terms of the rules that follow names alike from the statements naming them into
    the functions that use those names (cudalint.engine.first_pass.outline's triggers): through
    import aliases alone (`ctx.qualname`), or also through top-level assignments (`assigned`:
    cudalint.rules.assignments.TracksAssignments), `Rule.follows_assignments`."""

    assigned: bool
    follow: tuple[bytes, ...] | None  # `Terms.follow`
    terms: Prefilter

    def loose(self, text: bytes) -> bool:
        """A function naming what a statement of `text` binds may report with nothing more:
        the rules follow anything, or that statement names what `follow` asks for (an alias of
        `torch.set_default_dtype`)."""
        return self.follow is None or self.reaches(text)

    def reaches(self, code: bytes) -> bool:
        """`code` names what `follow` asks for."""
        return self.follow is not None and any(_regex(p).search(code) for p in self.follow)


# What a Prefilter looks for: its substrings, words, calls, patterns and conjunctions.
TermsKey = tuple[tuple[bytes, ...], frozenset[bytes], frozenset[bytes], tuple[bytes, ...],
                 tuple[tuple[bytes, ...], ...], frozenset[bytes]]


@dataclass(frozen=True)
class Prefilter:
    substrings: tuple[bytes, ...]
    words: frozenset[bytes] = frozenset()
    calls: frozenset[bytes] = frozenset()
    patterns: tuple[bytes, ...] = ()
    together: tuple[tuple[bytes, ...], ...] = ()
    # the rules' quiet words and calls (`Terms.quiet`) that no rule names otherwise
    quiet: frozenset[bytes] = frozenset()
    # every call of the rules (`within` narrows `calls`): the one pattern `_called` compiles
    _all_calls: frozenset[bytes] = field(default=frozenset(), compare=False, repr=False)
    # the rules' terms by how the rules follow names (`within` keeps them whole; `followers`
    # narrows them); none: every rule follows every name a statement naming a term binds
    _followers: tuple[Follower, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def for_rules(cls, rules: Iterable[Rule], settings: Settings) -> Prefilter:
        """The pre-filter of `rules` under `settings`; a run asks once per file for the same
        one, which is built once."""
        rules = tuple(rules)
        if _last is not None and _last[0] == rules and _last[1] == settings:
            return _last[2]
        built = cls._build(rules, settings)
        _remember(rules, settings, built)
        return built

    @classmethod
    def _build(cls, rules: Iterable[Rule], settings: Settings) -> Prefilter:
        terms = {rule: rule.prefilter(settings) for rule in rules}
        built = cls._merged(terms.values())
        groups: dict[tuple[bool, tuple[str, ...] | None], list[Terms]] = {}
        for rule, found in terms.items():
            key = (getattr(rule, "follows_assignments", True), found.follow)
            groups.setdefault(key, []).append(found)
        followers = tuple(
            Follower(assigned, None if follow is None else tuple(p.encode() for p in follow),
                     built if len(groups) == 1 else cls._merged(group))
            for (assigned, follow), group in groups.items())
        return built.replace(_followers=followers)

    @classmethod
    def _merged(cls, found: Iterable[Terms]) -> Prefilter:
        substrings: dict[bytes, None] = {}
        words: set[bytes] = set()
        calls: set[bytes] = set()
        patterns: dict[bytes, None] = {}
        together: dict[tuple[bytes, ...], None] = {}
        quiet: set[bytes] = set()
        loud: set[bytes] = set()
        for terms in found:
            quiet.update(name.encode() for name in terms.quiet)
            loud.update(name.encode() for name in (terms.words | terms.calls) - terms.quiet)
            substrings.update(dict.fromkeys(k.encode() for k in terms.keywords))
            words.update(w.encode() for w in terms.words)
            calls.update(c.encode() for c in terms.calls)
            patterns.update(dict.fromkeys(p.encode() for p in terms.patterns))
            together.update(dict.fromkeys(tuple(p.encode() for p in group)
                                          for group in terms.together))
        calls -= words
        return cls(tuple(substrings), frozenset(words), frozenset(calls), tuple(patterns),
                   tuple(together), frozenset(quiet - loud), frozenset(calls))

    def replace(self, **changes: object) -> Prefilter:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def followers(self) -> list[Follower]:
        """The rules' terms by how they follow names, each narrowed to this pre-filter's
        terms (`within`); those that keep none are left out."""
        if not self._followers:
            return [Follower(True, None, self)]
        found = []
        for follower in self._followers:
            narrowed = follower.terms.restricted(self)
            if narrowed is not None:
                found.append(Follower(follower.assigned, follower.follow, narrowed))
        return found

    def restricted(self, other: Prefilter) -> Prefilter | None:
        """This pre-filter with only the terms `other` has too; None when none is left."""
        substrings = tuple(k for k in self.substrings if k in other.substrings)
        words, calls = self.words & other.words, self.calls & other.calls
        patterns = tuple(p for p in self.patterns if p in other.patterns)
        together = tuple(group for group in self.together if group in other.together)
        if not substrings and not words and not calls and not patterns and not together:
            return None
        return Prefilter(substrings, words, calls, patterns, together,
                         self.quiet & (words | calls), self._all_calls)

    def terms(self) -> TermsKey:
        """What it looks for (not how it remembers it)."""
        return self.substrings, self.words, self.calls, self.patterns, self.together, self.quiet

    def within(self, data: bytes) -> Prefilter | None:
        """This pre-filter with only the terms `data` names (a part of `data` can name no
        other); None when it names none, so `data` does not match. A pattern is searched
        only where `data` holds what it needs (cudalint.engine.first_pass.needs)."""
        text = _Text(data)
        substrings = tuple(keyword for keyword in self.substrings if text.holds(keyword))
        found = text.found() if self.words or self.calls else frozenset()
        words, calls = self.words & found, self.calls & found
        patterns = tuple(p for p in self.patterns if text.search(p))
        together = tuple(group for group in self.together if text.all_match(group))
        if not substrings and not words and not calls and not patterns and not together:
            return None
        return Prefilter(substrings, frozenset(words), frozenset(calls), patterns, together,
                         self.quiet & (words | calls), self._all_calls, self._followers)

    def matches(self, data: bytes, words: AbstractSet[bytes] | None = None) -> bool:
        """`data` names a term, wherever (a call's name counts anywhere). `words`: the
        identifiers of `data` (`identifiers`), when the caller has them."""
        if self._named(data):
            return True
        if words is None:
            if not self.words and not self.calls:
                return False
            words = identifiers(data)
        return not self.words.isdisjoint(words) or not self.calls.isdisjoint(words)

    def binds(self, data: bytes, words: AbstractSet[bytes] | None = None) -> bool:
        """`data` names a term other than a quiet one (`Terms.quiet`): what a statement
        there binds is worth following. `words`: as for `matches`."""
        if not self.quiet:
            return self.matches(data, words)
        if self._named(data):
            return True
        found = (identifiers(data) if words is None else set(words)) - self.quiet
        return not self.words.isdisjoint(found) or not self.calls.isdisjoint(found)

    def matches_code(self, text: bytes, node: ast.stmt, first: int,
                     words: AbstractSet[bytes] | None = None) -> bool:
        """The code of a function or class (`text`, its lines from line `first`; `node`, as
        `ast` read it) names a term, as the term counts: not in its docstrings, other bare
        strings or comments, and a call's name only where it is called or imported (not
        `mode` in a function that imports something else). `words`: the identifiers of
        `text`, when the caller has them."""
        if not self.matches(text, words):
            return False
        code = without_prose(text, node, first)
        if self._named(code):
            return True
        found = identifiers(code)
        if not self.words.isdisjoint(found):
            return True
        if self.calls.isdisjoint(found):
            return False
        if _called(self._all_calls or self.calls).search(code) is not None:
            return True
        return b"import" in code and (b"__import__" in code  # `__import__("apex")`
                                      or not self.calls.isdisjoint(_imported(node)))

    def _named(self, data: bytes) -> bool:
        """`data` holds a substring or matches a pattern or a group of them."""
        return any(keyword in data for keyword in self.substrings) or self._patterned(data)

    def _patterned(self, data: bytes) -> bool:
        return any(_regex(p).search(data) for p in self.patterns) \
            or any(_all_match(group, data) for group in self.together)


def identifiers(data: bytes) -> set[bytes]:
    """The identifiers in `data`, as `re.findall(rb"[A-Za-z_][A-Za-z0-9_]*", data)` finds
    them (`e5` in `1e5`), about twice as fast: the runs of identifier characters, split at C
    speed, without their leading digits."""
    found = set(data.translate(_BLANKS).split())
    numbers = {run for run in found if run[0] < 0x40}  # a run that starts with a digit
    if numbers:
        found -= numbers
        found.update(name for run in numbers if (name := run.lstrip(_DIGITS)))
    return found


def statements_in(node: ast.AST) -> Iterator[ast.AST]:
    """`node` (a module, statement, `except` clause or `case`) and every statement, `except`
    clause and `case` in its blocks, at any depth: what may be an import or a docstring,
    found without walking a single expression."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for name in _blocks_of(type(current)):
            stack.extend(getattr(current, name))


_BLOCKS_OF: dict[type[ast.AST], tuple[str, ...]] = {}


def _blocks_of(kind: type[ast.AST]) -> tuple[str, ...]:
    """The fields of `kind` that hold blocks (`BLOCK_FIELDS`)."""
    found = _BLOCKS_OF.get(kind)
    if found is None:
        found = _BLOCKS_OF[kind] = tuple(f for f in BLOCK_FIELDS if f in kind._fields)
    return found


def _imported(node: ast.stmt) -> set[bytes]:
    """Every name the import statements in `node` spell (`torch`, `linalg` and `eig` in
    `from torch.linalg import eig as e`)."""
    names: set[bytes] = set()
    for inner in statements_in(node):
        if isinstance(inner, (ast.Import, ast.ImportFrom)):
            for alias in inner.names:
                names.update(part.encode() for part in alias.name.split("."))
            if isinstance(inner, ast.ImportFrom) and inner.module:
                names.update(part.encode() for part in inner.module.split("."))
    return names


class _Text:
    """A text asked about the pre-filter's terms, and what is found in it once for them all:
    its identifiers (`identifiers`), those joined into one text (where a substring of
    identifier bytes is exactly where it is in the whole text, and fewer bytes to scan), and
    each pattern searched."""

    __slots__ = ("_ascii", "_found", "_joined", "_lower", "_lower_found", "_lower_joined",
                 "_searched", "data")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._found: set[bytes] | None = None
        self._joined: bytes | None = None
        self._lower_joined: bytes | None = None
        self._lower_found: set[bytes] | None = None
        self._lower: bytes | None = None
        self._ascii: bool | None = None
        self._searched: dict[bytes, bool] = {}

    def found(self) -> set[bytes]:
        if self._found is None:
            self._found = identifiers(self.data)
        return self._found

    def joined(self) -> bytes:
        """The identifiers, one a line."""
        if self._joined is None:
            self._joined = b"\n".join(self.found())
        return self._joined

    def lower_joined(self) -> bytes:
        if self._lower_joined is None:
            self._lower_joined = self.joined().lower()
        return self._lower_joined

    def lower_found(self) -> set[bytes]:
        """The identifiers in lower case (ASCII letters only, as `bytes.lower`)."""
        if self._lower_found is None:
            self._lower_found = set(self.lower_joined().split(b"\n"))
        return self._lower_found

    def holds(self, keyword: bytes, caseless: bool = False) -> bool:
        """`keyword` is a substring of the text (in either case of its ASCII letters)."""
        joined = self.lower_joined() if caseless else self.joined()
        parts, whole = _identifier_parts(keyword)
        for part in parts:
            if part not in joined:
                return False
        if whole:
            return True
        if not keyword.isascii() and self.isascii():
            return False
        if not caseless:
            return keyword in self.data
        if self._lower is None:
            self._lower = self.data.lower()
        return keyword in self._lower

    def isascii(self) -> bool:
        if self._ascii is None:
            self._ascii = self.data.isascii()
        return self._ascii

    def has(self, need: Need) -> bool:
        if not need.word:
            return self.holds(need.text, need.caseless)
        return need.text in (self.lower_found() if need.caseless else self.found())

    def possible(self, pattern: bytes) -> bool:
        """The text holds what `pattern` needs to match it."""
        guard = guard_of(pattern)
        if guard is None:
            return True
        if any(all(self.has(need) for need in needs) for needs in guard.others):
            return True
        if guard.words and self._starts(guard.words, guard.word_set & self.found()):
            return True
        return bool(guard.caseless) \
            and self._starts(guard.caseless, guard.caseless_set & self.lower_found())

    def _starts(self, paths: dict[bytes, tuple[tuple[Need, ...], ...]],
                present: AbstractSet[bytes]) -> bool:
        """The text holds the rest of a path that starts with one of the `present` words."""
        return any(all(self.has(need) for need in rest) for first in present
                   for rest in paths[first])

    def search(self, pattern: bytes) -> bool:
        known = self._searched.get(pattern)
        if known is None:
            known = self._searched[pattern] = self.possible(pattern) \
                and _regex(pattern).search(self.data) is not None
        return known

    def all_match(self, group: tuple[bytes, ...]) -> bool:
        """The text matches every pattern of `group`: what each needs is checked first."""
        return all(self.possible(p) for p in group) and all(self.search(p) for p in group)


@lru_cache(maxsize=512)
def _identifier_parts(keyword: bytes) -> tuple[tuple[bytes, ...], bool]:
    """The runs of identifier bytes in `keyword`, each of which an identifier of a text
    holding `keyword` holds, and whether `keyword` is one (`identifier_like`): then it is
    in the text exactly where it is in one of the text's identifiers."""
    if identifier_like(keyword):
        return (keyword,), True
    parts = keyword.translate(_BLANKS).split()
    return tuple(part for part in parts if identifier_like(part)), False


def _all_match(group: tuple[bytes, ...], data: bytes) -> bool:
    return all(_regex(p).search(data) for p in group)


@lru_cache(maxsize=256)
def _regex(pattern: bytes) -> re.Pattern[bytes]:
    return re.compile(pattern)


@lru_cache(maxsize=4)
def _called(calls: frozenset[bytes]) -> re.Pattern[bytes]:
    """A call of one of `calls`, whatever stands between the name and its parenthesis;
    compiled when a function first needs it (an alternation of the operator table's names:
    milliseconds a small check need not spend)."""
    return re.compile(rb"\b(?:%s)%s\(" % (b"|".join(sorted(calls)), GAP.encode()))


_last: tuple[tuple[Rule, ...], Settings, Prefilter] | None = None


def _remember(rules: tuple[Rule, ...], settings: Settings, built: Prefilter) -> None:
    global _last
    _last = (rules, settings.replace(), built)  # a copy: the caller's may change


def without_prose(text: bytes, node: ast.stmt, first: int) -> bytes:
    """`text` without the bare string statements (docstrings) in `node` and its comments."""
    quoted = b"'" in text or b'"' in text  # else it holds no string, bare or not
    strings = sorted(_bare_strings(node), key=_start, reverse=True) if quoted else []
    code = text
    if strings:
        lines = text.splitlines(keepends=True)
        for string in strings:
            _blank(lines, string, first)
        code = b"".join(lines)
    if b"#" not in code:  # no comment to drop
        return code
    if _NESTING_FSTRINGS and _FSTRING.search(code):
        return code
    # The strings kept and the comments dropped: `split` gives the text between them, and
    # the `string` group of each (None for a comment), with no Python call per match.
    return b"".join(filter(None, _STRING_OR_COMMENT.split(code)))


def _bare_strings(node: ast.stmt) -> Iterator[ast.expr]:
    """The string constants that make up statements of their own, in every block."""
    for inner in statements_in(node):
        if isinstance(inner, ast.Expr) and inner is not node \
                and isinstance(inner.value, ast.Constant) and isinstance(inner.value.value, str):
            yield inner.value


def _start(node: ast.expr) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _blank(lines: list[bytes], string: ast.expr, first: int) -> None:
    """Replace `string` by a space; left alone where its offsets do not fit the bytes (a file
    in another encoding than UTF-8)."""
    top, bottom = string.lineno - first, (string.end_lineno or string.lineno) - first
    start, end = string.col_offset, string.end_col_offset or 0
    if top < 0 or bottom >= len(lines) or lines[top][start:start + 1] not in _OPENING \
            or lines[bottom][end - 1:end] not in (b"'", b'"'):
        return
    if top == bottom:
        lines[top] = lines[top][:start] + b" " + lines[top][end:]
        return
    ending = lines[top][len(lines[top].rstrip(b"\r\n")):]
    lines[top] = lines[top][:start] + ending
    for index in range(top + 1, bottom):
        lines[index] = lines[index][len(lines[index].rstrip(b"\r\n")):]
    lines[bottom] = b" " + lines[bottom][end:]


_OPENING = frozenset({b"'", b'"', b"r", b"R", b"u", b"U"})

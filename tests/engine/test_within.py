"""`Prefilter.within` checks what each pattern needs (cudalint.engine.first_pass.needs) before it
searches for it: it answers as the plain search of every term does (tests/engine/within_oracle.py),
on texts made of the terms' own pieces, on every file of the installed torch, and a pattern is
never ruled out where it matches."""

from __future__ import annotations

import importlib.util
import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudalint.engine.first_pass.needs import Need, needs_of
from cudalint.engine.first_pass.prefilter import GAP, Prefilter, _Text, caseless_word, word
from cudalint.engine.walk.context import Settings
from cudalint.rules import all_rules
from tests.engine import within_oracle

_SETTINGS = (Settings(), Settings(target_torch=(2, 13)),
             Settings(extension_modules=frozenset({"pkg._C"})))
GENERATED = settings(max_examples=300, derandomize=True, deadline=None, database=None,
                     suppress_health_check=list(HealthCheck))


@cache
def _prefilters() -> tuple[Prefilter, ...]:
    """The pre-filter of all the rules, and of each rule alone, under a few settings."""
    found = [Prefilter.for_rules(all_rules(), s) for s in _SETTINGS]
    found.extend(Prefilter.for_rules([rule], Settings()) for rule in all_rules())
    return tuple(dict.fromkeys(found))


def _answer(prefilter: Prefilter | None) -> object:
    return None if prefilter is None else (prefilter.terms(), prefilter._all_calls,
                                           prefilter._followers)


def _same(data: bytes) -> None:
    for prefilter in _prefilters():
        assert _answer(prefilter.within(data)) == _answer(within_oracle.within(prefilter, data))


@cache
def _pieces() -> tuple[str, ...]:
    """What the terms are made of: their substrings, words and calls, the literal runs their
    patterns need, and what stands between tokens (blanks, comments, backslash-newlines,
    brackets), with the letters a caseless pattern folds (the Kelvin sign, dotted and dotless
    i, long s)."""
    found: dict[str, None] = {}
    for prefilter in _prefilters():
        for term in (*prefilter.substrings, *prefilter.words, *sorted(prefilter.calls)[:30]):
            found[term.decode()] = None
        for pattern in (*prefilter.patterns, *(p for g in prefilter.together for p in g)):
            for path in needs_of(pattern) or ():
                found.update(dict.fromkeys(n.text.decode("utf-8", "replace") for n in path))
    found.update(dict.fromkeys([
        " ", "\t", "\n", "\\\n", "# note\n", "#", "(", ")", ",", "=", ".", "*", "**", "[",
        "0", "1", "7", "x", "_", "a1", "from ", "import ", " as ", "to", "device", "float",
        "complex", "\u212a", "\u0130", "\u0131", "\u017f", "LOCAL_RANK", "Rank", "gPu_Id",
        "'", '"', "\r\n", "é",
    ]))
    return tuple(found)


_TEXTS = st.lists(st.sampled_from(_pieces()), max_size=14).map(lambda parts: "".join(parts))


@GENERATED
@given(_TEXTS)
def test_within_answers_as_the_plain_search_on_texts_of_the_terms_pieces(text: str) -> None:
    _same(text.encode())


@GENERATED
@given(st.lists(st.sampled_from(_pieces()), max_size=6), st.sampled_from(_pieces()))
def test_within_answers_as_the_plain_search_with_any_case(parts: list[str], last: str) -> None:
    text = "".join(part.upper() if i % 2 else part for i, part in enumerate([*parts, last]))
    _same(text.encode())


@pytest.mark.parametrize("text", [
    "", "x", "model.to(args.local_rank)\n", "x.to(LOCAL_RANK)\n", "model.to(localRan\u212a)\n",
    "d = torch.device(gpu_\u0130d)\n", "from  cupy \\\n import RawKernel\n",
    "from numba import cuda  # jit\n@cuda.jit\ndef k(): pass\n", "y = x.to(# c\n 3)\n",
    "dtype=float)\nx.astype(float)\n", "import cupy as cp\nk = cp.RawKernel(src, 'k')\n",
    "1rank = 2\n", "rank)\n", "os.system('nvidia-smi')\n", "x.cuda()\n",
])
def test_within_answers_as_the_plain_search_on_chosen_texts(text: str) -> None:
    _same(text.encode())


def _torch_files() -> list[Path]:
    spec = importlib.util.find_spec("torch")  # its path only: the linter never imports torch
    if spec is None or not spec.submodule_search_locations:
        return []
    return sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.py"))


def test_within_answers_as_the_plain_search_on_every_torch_file() -> None:
    files = _torch_files()  # torch: of the dev extra
    assert len(files) > 1000
    prefilter = Prefilter.for_rules(all_rules(), Settings())
    for path in files:
        data = path.read_bytes()
        assert _answer(prefilter.within(data)) == \
            _answer(within_oracle.within(prefilter, data)), path


# --- what a pattern needs is in every text it matches

_ATOMS = st.sampled_from([
    "to", "device", "rank", "a", "_x", "9", "\\.", "\\(", ",", "[(,]", "[0-9]", "[A-Za-z]",
    "\\d", "\\w", "\\s", "[^a]", ".", "\\b", "as\\b", "(?![A-Za-z0-9_])", "(?<=a)",
    "(?<![A-Za-z0-9_])", "(?<!\\.)", "(?=b)", GAP, "\u212a", "x{2}", "x{1,3}", "\\Z", "^",
])
_WORDS = st.sampled_from(["to", "rank", "local_rank", "gpu", "x9", "cupy", "as"])


def _pattern(draw_atoms: list[str], words: list[str], caseless: list[str], branch: bool) -> str:
    parts = [*draw_atoms]
    parts.extend(word(w) for w in words)
    if caseless:
        parts.append(caseless_word(caseless))
    if branch and len(parts) > 1:
        return f"(?:{parts[0]}|{''.join(parts[1:])})"
    return "".join(parts)


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern.encode())
    except re.error:
        return False
    return True


_TEXT_PARTS = st.lists(st.sampled_from([
    "to", "device", "rank", "RANK", "Local_Rank", "gpu", "x9", "cupy", "as", "a", "b", "x", "9",
    "_", ".", "(", ",", " ", "\n", "# c\n", "\\\n", "\u212a", "\u0130", "é", "xx",
]), max_size=12).map(lambda parts: "".join(parts).encode())


@settings(max_examples=600, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.one_of(st.builds(lambda a, b: a + b, st.sampled_from(["", "to", "rank"]), _ATOMS),
                 _ATOMS), _TEXT_PARTS)
def test_what_a_small_pattern_needs_is_in_every_text_it_matches(pattern: str,
                                                                 data: bytes) -> None:
    _never_ruled_out(pattern.encode(), data)


@settings(max_examples=600, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.builds(_pattern, st.lists(_ATOMS, max_size=3), st.lists(_WORDS, max_size=2),
                 st.lists(_WORDS, max_size=2), st.booleans()).filter(_compiles), _TEXT_PARTS)
def test_what_a_pattern_needs_is_in_every_text_it_matches(pattern: str, data: bytes) -> None:
    _never_ruled_out(pattern.encode(), data)


def _never_ruled_out(pattern: bytes, data: bytes) -> None:
    if re.search(pattern, data):
        assert _Text(data).possible(pattern), (pattern, data)


def test_a_word_needs_its_identifier_and_a_substring_its_bytes() -> None:
    assert needs_of(word("to").encode() + b"\\(") == ((Need(b"to", True), Need(b"to(")),)
    assert needs_of(b"from" + GAP.encode() + word("cupy").encode()) == \
        ((Need(b"cupy", True), Need(b"from")),)
    caseless = needs_of(caseless_word(["rank"]).encode())
    assert caseless is not None and (Need(b"rank", True, True),) in caseless
    assert needs_of(b"(?:a)*") is None and needs_of(b"x|y*") is None


def test_a_caseless_word_is_found_in_any_case_and_fold() -> None:
    pattern = caseless_word(["local_?rank"]).encode()
    for text in ("LOCAL_RANK", "localRank", "local_ran\u212a", "x(localrank)"):
        assert _Text(text.encode()).possible(pattern), text
    for text in ("local_ranks", "xlocal_rank", "local rank", "local_rank_"):
        assert not _Text(text.encode()).possible(pattern), text

"""The depth gate skips expressions too short to be deep: its answer is the full walk's, which
counts the chains LibCST nests and `ast` keeps flat (tests/engine/nesting.py)."""

from __future__ import annotations

import ast

import pytest

from cudalint.engine.reading import depth
from cudalint.engine.reading.depth import MAX_DEPTH, TooDeep, deeper_than
from tests.engine.nesting import libcst_depth

_BLOCKS = ("if a:", "with a as (b):", "try:", "for x in (y):", "while (x):", "match x:",
           "case _:", "def f(a=(1), *, b: (int) = 2):", "class C((B)):", "async def g():",
           "async with a:")


def _nested(blocks: int, minus: int) -> str:
    """`blocks` blocks of every kind, one in the other, around an expression `minus` deep
    (each `try:` ends with an `except` naming its exception)."""
    lines = [" " * level + _BLOCKS[level % len(_BLOCKS)] for level in range(blocks)]
    lines.append(" " * blocks + f"x = {'-' * minus}1")
    for level in reversed(range(blocks)):
        if _BLOCKS[level % len(_BLOCKS)] == "try:":
            lines += [" " * level + "except (E) as e:", " " * (level + 1) + "pass"]
    return "\n".join(lines) + "\n"


SOURCES = [
    *(f"x = {'-' * n}1\n" for n in range(MAX_DEPTH - 8, MAX_DEPTH + 3)),
    *(f"def f():\n    if a:\n        x = {'-' * n}1\n" for n in range(MAX_DEPTH - 14, MAX_DEPTH)),
    *("x = (\n" + "    -\n" * n + "  1)\n" for n in range(MAX_DEPTH - 8, MAX_DEPTH + 3)),
    *(f"x = f'{{{'-' * n}1}}'\n" for n in range(MAX_DEPTH - 8, MAX_DEPTH + 3)),
    *(f"x = {'not ' * n}1\n" for n in range(MAX_DEPTH - 8, MAX_DEPTH + 3)),
    *(f"y = {'a[' * n}0{']' * n}\n" for n in range(MAX_DEPTH // 2 - 4, MAX_DEPTH // 2 + 4)),
    "x = " + " + ".join(["1"] * 322) + "\n",
    *(_nested(blocks, minus) for blocks in (30, 45, 60) for minus in range(0, 90, 3)),
    "model = model.cuda()\n" * 50,
    *(_nested(blocks, minus) for blocks in (30, 45, 60)
      for minus in range(MAX_DEPTH - 2 * blocks - 8, MAX_DEPTH - 2 * blocks + 4)),
]

# A statement of each kind that holds an expression `minus` levels deep (`{e}`), where the
# statement's text is hardly longer than the expression's: a bare expression, a decorator, a
# default value, an annotation, a keyword, a `case` pattern (`[[x]]`), an `except` clause...
_HOLDERS = ("{e}", "@{e}\ndef f(): pass", "def f(a={e}): pass", "def f(a: {e}): pass",
            "f(a={e})", "match x:\n case {p}: pass", "try: pass\nexcept {e}: pass",
            "lambda: {e}", "with {e}: pass", "[a for a in {e}]", "del a[{e}]",
            "class C({e}): pass", "x += {e}", "return {e}", "assert {e}, {e}",
            "raise {e} from {e}")


def _held(template: str, blocks: int, minus: int) -> str:
    """`template` with its expression (`-` `minus` times) inside `blocks` nested `if`s."""
    lines = [" " * level + "if a:" for level in range(blocks)]
    body = template.format(e="-" * minus + "1", p="[" * minus + "x" + "]" * minus)
    lines.extend(" " * blocks + line for line in body.splitlines())
    return "\n".join(lines) + "\n"


def _chains(n: int) -> list[str]:
    """Chains of about `n` links that `ast` keeps flat and LibCST nests, alone, in blocks, in
    one another, in an f-string's field, beside a format spec and on many lines."""
    return [
        "x = " + " and ".join(["a"] * n) + "\n",
        "def f():\n    if a:\n        return " + " or ".join(["(a)"] * n) + "\n",
        "x = " + " ".join(['"a"'] * n) + "\n",
        "x = (\n" + "".join(f"    b'{i}'  # {i}\n" for i in range(n)) + ")\n",
        "x = " + " ".join(["f'{a}'", "'b'"] * (n // 2)) + "\n",
        "x = f\"{" + " ".join(["'a'"] * n) + "}\"\n",
        "x = f'{a:>{w}}' " + " ".join(['"a"'] * n) + "\n",
        "x = [a " + " ".join(["for a in b"] * n) + "]\n",
        "x = {a: b " + " ".join(["for a in b if c"] * n) + "}\n",
        "x = " + " and ".join(["-a"] * (n // 2)) + " or " + " ".join(['"a"'] * (n // 2)) + "\n",
        "x = " + " and ".join(["('a' 'b')"] * n) + "\n",
        "x = '''a''' " + "'b' " * n + "\n",
    ]


SOURCES += [source for n in range(MAX_DEPTH - 6, MAX_DEPTH + 3) for source in _chains(n)]
SOURCES += ["x = " + " and ".join(["a"] * 8000) + "\n", "x = '\"' '\"'\n" * 300,
            "x = '" + '"' * 500 + "'\n"]
SOURCES += [_held(template, blocks, minus) for template in _HOLDERS for blocks in (0, 20, 50)
            for minus in range(MAX_DEPTH - blocks - 10, MAX_DEPTH - blocks + 3)]


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: f"{len(s)}-chars")
def test_the_gate_answers_as_the_full_walk(source: str) -> None:
    tree = ast.parse(source)
    expected = libcst_depth(tree, source.encode()) > MAX_DEPTH
    assert deeper_than(tree, MAX_DEPTH, source.encode()) is expected


def test_both_answers_occur() -> None:
    answers = {libcst_depth(ast.parse(s), s.encode()) > MAX_DEPTH for s in SOURCES}
    assert answers == {True, False}


@pytest.mark.parametrize("source", ["x = " + " and ".join(["a"] * 8000) + "\n",
                                    "x = " + " ".join(["'a'"] * 8000) + "\n"],
                         ids=["and-chain", "strings"])
def test_libcst_is_not_asked_to_parse_what_the_gate_refuses(source: str) -> None:
    """(LibCST's native parser overflowed the C stack on the and-chain: a segfault.)"""
    with pytest.raises(TooDeep):
        depth.parse_module(source)
    with pytest.raises(TooDeep):
        depth.parse_expression(source.removeprefix("x = "))


def test_what_the_gate_passes_libcst_parses_and_cpython_refusals_are_syntax_errors() -> None:
    source = "x = " + " and ".join(["a"] * (MAX_DEPTH - 10)) + "\n"
    assert depth.parse_module(source).code == source
    with pytest.raises(SyntaxError):
        depth.parse_module("print 'python 2'\n")


@pytest.mark.parametrize("pieces", [MAX_DEPTH - 3, MAX_DEPTH - 2, MAX_DEPTH - 1])
def test_a_byte_order_mark_does_not_move_a_strings_pieces(pieces: int) -> None:
    """`ast` counts the first line's columns after the mark: the string's text is still
    found (else every quote would count as half a piece)."""
    source = "x = " + " ".join(["'a'"] * pieces) + "\n"
    tree = ast.parse(source)
    expected = libcst_depth(tree, source.encode()) > MAX_DEPTH
    assert deeper_than(tree, MAX_DEPTH, b"\xef\xbb\xbf" + source.encode()) is expected

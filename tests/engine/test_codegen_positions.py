"""engine/locate/codegen_positions gives exactly LibCST's PositionProvider positions, for every node
(whitespace included) of modules of every layout, and of a statement generated alone."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from cudalint.engine.locate.codegen_positions import positions_of
from tests.engine.test_outline import _LAYOUTS

_ROOT = Path(__file__).resolve().parents[2]
_MORE = {
    "lone carriage returns": "import torch\rx = (\r    1,\r)\rdef f():\r    return x\r",
    "parentheses, strings and comprehensions": (
        "x = ((a.b)(c)[d:e, ::2])\ny = f'{x!r:>{w}}' 'tail' \"\"\"\nmore\n\"\"\"\n"
        "z = [i for i in (1, 2) if i if not i]\nw = {**a, 'k': (yield)}\n"
        "lambda q, *r, s=1, **t: (q, r)\nassert x, (y)\ndel (a), b[0]\n"
    ),
    "statements": (
        "try:\n    pass\nexcept (A, B) as e:\n    raise C from e\nelse:\n    pass\n"
        "finally:\n    pass\nwith a as (b, c), d:\n    global g\nwhile x := f():\n"
        "    break\nfor i, j in k:\n    continue\nmatch p:\n    case [1, *rest] | {'k': _}:\n"
        "        pass\n    case Point(x=0) if x:\n        pass\n"
    ),
}
_SOURCES = {**_LAYOUTS, **_MORE, **{
    path.name: path.read_text(encoding="utf-8")
    for path in sorted((_ROOT / "src" / "cudalint" / "engine").rglob("[a-p]*.py"))}}


def _libcst(module: cst.Module) -> dict[cst.CSTNode, object]:
    return dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))


@pytest.mark.parametrize("source", _SOURCES.values(), ids=_SOURCES.keys())
def test_a_module_is_placed_as_libcst_places_it(source: str) -> None:
    module = cst.parse_module(source)
    assert positions_of(module, module) == _libcst(module)


def test_a_statement_alone_from_its_line_and_indent() -> None:
    source = ("class A:\n\n    # about f\n    def f(self, x):\n        return (x\n"
              "            .cuda())\n")
    module = cst.parse_module(source)
    expected = _libcst(module)
    block = module.body[0].body
    assert isinstance(block, cst.IndentedBlock)
    method = block.body[0]
    alone = positions_of(method, module, line=2, indent=["    "])
    assert len(alone) > 20
    assert all(alone[node] == expected[node] for node in alone)

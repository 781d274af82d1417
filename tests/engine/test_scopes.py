"""engine/walk/scopes: which values a scope assigns to which names."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from cudalint.engine.first_pass.sparse import Hidden, units_of
from cudalint.engine.walk import scopes, visiting

_ROOT = Path(__file__).resolve().parents[2]
_EVERY_BLOCK = """\
import torch
a = torch.randn(3)
b = c = a.cuda()
d, e = 1, 2
f: int = 3
g += 1
h.i = 4
j[0] = 5


def outer():
    k = torch.zeros(2)
    def inner(): m = k; return m
    lambda: (n := 1)
    class Inside:
        o = 1
    if k: p = 1
    elif m:
        p = 2
    else:
        q = [r for r in k]
    for s in k:
        t = s
    else:
        u = 6
    while v:
        w = 7
    else:
        w = 8
    with open(x) as y:
        z = y
    try:
        aa = 9
    except ValueError as bb:
        cc = bb
    else:
        dd = 10
    finally:
        ee = 11
    try:
        pass
    except* OSError:
        ff = 12
    match k:
        case [1, *rest]:
            gg = rest
        case _:
            hh = 13


async def run():
    async with a as b:
        ii = await b
    async for jj in a:
        kk = jj
"""


def _by_visiting(module: cst.Module) -> dict[str, list[cst.BaseExpression]]:
    """What visiting every Assign node of the module finds (the reference)."""
    found: dict[str, list[cst.BaseExpression]] = {}
    for node in visiting.find_all(module, (cst.Assign,)):
        assert isinstance(node, cst.Assign)
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                found.setdefault(target.target.value, []).append(node.value)
    return found


_SOURCES = {"every kind of block": _EVERY_BLOCK, **{
    path.relative_to(_ROOT).as_posix(): path.read_text(encoding="utf-8")
    for path in [*sorted((_ROOT / "fixtures").rglob("*.py")),
                 *sorted((_ROOT / "src" / "cudalint" / "engine").rglob("*.py"))]}}


@pytest.mark.parametrize("source", _SOURCES.values(), ids=_SOURCES.keys())
def test_names_assigned_anywhere_are_what_visiting_every_assignment_finds(source: str) -> None:
    module = cst.parse_module(source)
    assert scopes.named_anywhere(module) == _by_visiting(module)


def test_names_assigned_anywhere_in_every_kind_of_block() -> None:
    found = scopes.named_anywhere(cst.parse_module(_EVERY_BLOCK))
    assert set(found) == {"a", "b", "c", "k", "m", "o", "p", "q", "t", "u", "w", "z", "aa",
                          "cc", "dd", "ee", "ff", "gg", "hh", "ii", "kk"}
    assert len(found["p"]) == 2 and len(found["w"]) == 2
    assert found["b"] == found["c"]  # `b = c = ...`: one value, both names


@pytest.mark.parametrize("source", _SOURCES.values(), ids=_SOURCES.keys())
def test_names_hidden_code_assigns_are_what_walking_every_node_finds(source: str) -> None:
    """The same question about the functions LibCST did not read, asked of `ast`."""
    tree = ast.parse(source)
    units = units_of(source.encode(), tree)
    expected: dict[str, list[int]] = {}
    for unit in units:
        for node in ast.walk(unit.node):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        expected.setdefault(target.id, []).append(id(node.value))
    found = Hidden(units, source).assigned
    assert {name: sorted(map(id, values)) for name, values in found.items()} == \
        {name: sorted(values) for name, values in expected.items()}

"""The first pass: where each top-level statement starts, and which functions the LibCST
traversal may skip because they name nothing the enabled rules look for."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from cudalint.engine.first_pass.outline import Outline, outline
from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.locate.positions import StatementPositions, whole_module_positions
from cudalint.engine.walk.visiting import find_all
from tests.lint import codes_at, findings

_LAYOUTS = {
    "comments and blank lines": (
        "#!/usr/bin/env python\n# header\n\nimport torch\n\n\n# about f\ndef f(x):\n"
        "    return x.cuda()  # move\n\n# trailing\n"
    ),
    "decorators with comments between": (
        "import functools\n\n# before\n@functools.cache\n# between\n@staticmethod\n"
        "def g(\n    a,\n    b,\n):\n    return a.to('cuda')\n"
    ),
    "semicolons and continuations": (
        "a = 1; b = torch.zeros(\n    3, device='cuda'); c = 2\nx = 1 + \\\n    2\n"
        "if x:\n    y = 'cuda'\nelse: y = 'cpu'\n"
    ),
    "classes and nested functions": (
        "class Net(torch.nn.Module):\n    '''A net.'''\n\n    size = 3\n\n"
        "    def forward(self, x):\n        def inner(y):\n            return y.cuda()\n"
        "        return inner(x)\n\n    async def run(self):\n        pass\n"
    ),
    "windows newlines": "import torch\r\n\r\ndef f(x):\r\n    return x.cuda()\r\n",
    "no trailing newline": "import torch\nmodel = torch.nn.Linear(2, 2).cuda()",
}


_WHITESPACE = (cst.EmptyLine, cst.Comment, cst.Newline, cst.TrailingWhitespace,
               cst.SimpleWhitespace, cst.ParenthesizedWhitespace)
_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize("source", _LAYOUTS.values(), ids=_LAYOUTS.keys())
def test_statement_positions_are_libcst_positions(source: str) -> None:
    module = cst.parse_module(source)
    first_pass = outline(source.encode(), module, None)
    assert first_pass is not None
    expected = whole_module_positions(module)
    positions = StatementPositions(module, first_pass, hints=[])
    syntax = [node for node in expected if not isinstance(node, (cst.Module, *_WHITESPACE))]
    assert syntax
    assert all(positions[node] == expected[node] for node in syntax)


_CLASSES = {
    "methods": _LAYOUTS["classes and nested functions"],
    "tabs, comments, semicolons and a nested class": (
        "import torch\n\n\n@decorate\n# between\nclass A(B):\n\t# a comment\n\tx = 1; y = 2\n"
        "\n\t@property\n\t# here\n\tdef cuda(self):  # trailing\n\t\treturn self.to(\n"
        "\t\t\t'cuda')\n\n\tclass Inner:\n\t\tdef f(self): return 1\n\tif x:\n"
        "\t\tdef g(self): pass\n\tdef h(self): pass  # last\n# after\n"
    ),
    "windows newlines": "class A:\r\n    def f(self):\r\n        return 'cuda'\r\n",
}
_FIXTURE_SOURCES = {path.name: path.read_text(encoding="utf-8")
                    for path in sorted(_FIXTURES.rglob("*.py"))}


@pytest.mark.parametrize("source", [*_CLASSES.values(), *_FIXTURE_SOURCES.values()],
                         ids=[*_CLASSES, *_FIXTURE_SOURCES])
def test_a_method_is_placed_alone_as_libcst_places_it(source: str) -> None:
    """Each statement of a class's body, generated alone at its indentation from the line the
    first pass gives it, has the positions a whole-module codegen gives it."""
    module = cst.parse_module(source)
    first_pass = outline(source.encode(), module, None)
    assert first_pass is not None
    expected = whole_module_positions(module)
    for index, statement in enumerate(module.body):
        if not isinstance(statement, cst.ClassDef):
            continue
        assert isinstance(statement.body, cst.IndentedBlock)
        for member, node in enumerate(statement.body.body):
            positions = StatementPositions(module, first_pass, hints=[(index, member)])
            inside = [n for n in find_all(node, (cst.CSTNode,))
                      if n in expected and not isinstance(n, _WHITESPACE)]
            assert all(positions[n] == expected[n] for n in inside)
            assert statement not in positions._known  # the class itself was not generated


def test_a_node_outside_every_statement_is_placed_from_the_whole_module() -> None:
    module = cst.parse_module("# only a comment\n")
    positions = StatementPositions(module, Outline((), frozenset()), hints=[])
    assert positions[module].start.line == 1


_SOURCE = """\
import torch
from torch.cuda import amp as mixed
DEVICE = "cuda"


def plain(x):
    return x + 1


def uses_alias():
    return mixed.GradScaler()


def uses_constant(model):
    return model.to(DEVICE)


class Net(torch.nn.Module):
    def forward(self, x):
        return x * 2

    def place(self):
        return self.cuda()
"""


def _skipped(source: str) -> set[str]:
    module = cst.parse_module(source)
    first_pass = outline(source.encode(), module, Prefilter((b"cuda",)))
    assert first_pass is not None
    named = [node for node in _definitions(module)]
    return {node.name.value for node in named if id(node) in first_pass.skip}


def _definitions(module: cst.Module) -> list[cst.FunctionDef | cst.ClassDef]:
    found: list[cst.FunctionDef | cst.ClassDef] = []
    for statement in module.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            found.append(statement)
        if isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
            found.extend(s for s in statement.body.body if isinstance(s, cst.FunctionDef))
    return found


def test_only_functions_naming_nothing_relevant_are_skipped() -> None:
    """`uses_alias` and `uses_constant` name no keyword, but names bound from CUDA."""
    assert _skipped(_SOURCE) == {"plain", "forward"}


def test_nothing_is_skipped_without_a_prefilter() -> None:
    module = cst.parse_module(_SOURCE)
    first_pass = outline(_SOURCE.encode(), module, None)
    assert first_pass is not None and not first_pass.skip


def test_a_file_ast_cannot_read_has_no_outline() -> None:
    source = "x = {**a for a in b}\n"  # LibCST parses it; Python's parser refuses it
    assert outline(source.encode(), cst.parse_module(source), None) is None


def test_a_function_naming_only_an_alias_is_checked(tmp_path: Path) -> None:
    """`step` names no keyword: the alias bound by a relevant import makes it visited."""
    source = (
        "import torch\nfrom torch.cuda import synchronize as sync\n\n\n"
        "def plain(x):\n    return x + 1\n\n\ndef step():\n    sync()\n"
    )
    assert codes_at(findings(tmp_path, source, codes=["CUD105"])) == [("CUD105", 10, 5)]


_NESTED = {
    "every kind of block": (
        "import torch\n\n\ndef f(x, y):\n    # lead\n    if x:\n        a = x.cuda()\n"
        "    elif y:\n\n        b = 1; c = 'cuda'\n    elif x or y:\n        pass\n    else:\n"
        "        # comment\n        d = torch.device('cuda')\n    try:\n        e = 1\n"
        "    except (A, B) as err:\n        f = 2\n    except C:\n        g = 3\n    else:\n"
        "        h = 4\n    finally:\n        i = 5\n    for j in x:\n        k = j\n"
        "    else:\n        m = 6\n    while x:\n        n = 7\n    else:\n        o = 8\n"
        "    with a as b, c:\n        @decorate\n        # between\n        def inner():\n"
        "            return 'cuda'\n    match x:\n        case [1, *rest]:\n            p = 9\n"
        "        case _:\n            q = 10\n    if x: r = 11\n    return x\n"
    ),
    "tabs, windows newlines and a class in a class": (
        "class A:\r\n\tclass B:\r\n\t\tdef f(self):\r\n\t\t\tif self:\r\n"
        "\t\t\t\treturn self.cuda()\r\n\t\t\treturn (\r\n\t\t\t\t1)\r\n"
    ),
    "try star, async and deep nesting": (
        "async def f():\n    try:\n        async with a:\n            async for b in c:\n"
        "                if b:\n                    while b:\n                        b -= 1\n"
        "    except* ValueError:\n        pass\n"
    ),
}


def _members_of_blocks(module: cst.Module) -> list[tuple[int, tuple[cst.CSTNode, ...]]]:
    """Every statement of an indented block below a top-level statement, with the nodes from
    that top-level statement down to it (cudalint.engine.walk.traversal.Chain)."""
    from cudalint.engine.walk.visiting import children

    found = []
    for index, top in enumerate(module.body):
        stack: list[list[cst.CSTNode]] = [[top]]
        while stack:
            path = stack.pop()
            if len(path) >= 3 and isinstance(path[-2], cst.IndentedBlock):
                found.append((index, tuple(path)))
            stack.extend([*path, child] for child in children(path[-1])
                         if isinstance(child, (cst.BaseStatement, cst.BaseSuite, cst.Else,
                                               cst.Finally, cst.ExceptHandler,
                                               cst.ExceptStarHandler, cst.MatchCase)))
    return found


@pytest.mark.parametrize("source", [*_NESTED.values(), *_CLASSES.values(),
                                    *_FIXTURE_SOURCES.values()],
                         ids=[*_NESTED, *_CLASSES, *_FIXTURE_SOURCES])
def test_a_statement_deep_in_blocks_is_placed_alone_as_libcst_places_it(source: str) -> None:
    """The innermost statement around a report, generated alone from the line `ast` gives it
    and the indentation of the blocks around it, has the positions a whole-module codegen
    gives it; nothing around it is generated."""
    module = cst.parse_module(source)
    first_pass = outline(source.encode(), module, None)
    assert first_pass is not None
    expected = whole_module_positions(module)
    chains = _members_of_blocks(module)
    assert chains or source in _FIXTURE_SOURCES.values()
    for chain in chains:
        positions = StatementPositions(module, first_pass, hints=[], chains=[chain])
        member = chain[1][-1]
        inside = [n for n in find_all(member, (cst.CSTNode,))
                  if n in expected and not isinstance(n, _WHITESPACE)]
        assert inside
        assert all(positions[n] == expected[n] for n in inside)
        assert chain[1][0] not in positions._known  # the top-level statement: not generated


def test_a_chain_ast_reads_otherwise_falls_back_to_the_statements() -> None:
    """A chain whose blocks `ast` does not read alike (here: a statement that is not in the
    block it names) places nothing; the node is found from its top-level statement."""
    source = _NESTED["every kind of block"]
    module = cst.parse_module(source)
    first_pass = outline(source.encode(), module, None)
    assert first_pass is not None
    chains = _members_of_blocks(module)
    index, nodes = next(c for c in chains if len(c[1]) == 3)  # a line of the function
    deeper = next(c[1][-1] for c in chains if len(c[1]) > 3)  # a line in a block in it
    broken = (index, (*nodes[:-1], deeper))
    assert first_pass.nested_start(index, broken[1], "    ") is None
    positions = StatementPositions(module, first_pass, hints=[], chains=[broken])
    assert positions[nodes[-1]] == whole_module_positions(module)[nodes[-1]]


def test_the_walk_notes_the_innermost_statement_around_each_report() -> None:
    """Each report's chain ends at the line of the function holding it, and leads there
    from the module's statement it is in; a report outside every block has no chain."""
    from cudalint.engine.walk.context import PythonContext
    from cudalint.engine.walk.traversal import walk
    from cudalint.rules import all_rules

    source = ("import torch\n\nx = torch.zeros(2).cuda()\n\n\ndef train(model, loader):\n"
              "    for batch in loader:\n        if batch:\n            model.cuda()\n"
              "    return model.cuda()\n")
    module = cst.parse_module(source)
    ctx = PythonContext(module)
    reported = walk(ctx, [r for r in all_rules() if r.code == "CUD102"])
    assert len(ctx.reports) == 3
    assert [(index, [type(n).__name__ for n in nodes]) for index, nodes in reported.chains] == [
        (2, ["FunctionDef", "IndentedBlock", "For", "IndentedBlock", "If", "IndentedBlock",
             "SimpleStatementLine"]),
        (2, ["FunctionDef", "IndentedBlock", "SimpleStatementLine"]),
    ]
    lines = [module.code_for_node(nodes[-1]).strip() for _, nodes in reported.chains]
    assert lines == ["model.cuda()", "return model.cuda()"]

"""`ast` reads only what the first pass looks into (cudalint.engine.first_pass.lazy_ast): a
placeholder stands in for each top-level function or class naming nothing, and once read it is the
node `ast.parse` gives; a check gives the same findings, and the same error lines, as before."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from cudalint.engine.contract import PythonRule
from cudalint.engine.first_pass import lazy_ast
from cudalint.engine.first_pass.lazy_ast import is_placeholder
from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.first_pass.sparse import Hidden, first_line, units_of
from cudalint.engine.lint.python import _compiled, lint_python
from cudalint.engine.reading.depth import MAX_DEPTH, TOO_DEEP
from cudalint.engine.walk.context import Settings
from cudalint.rules import all_rules

ROOT = Path(__file__).resolve().parents[2]
RULES = tuple(r for r in all_rules() if issubclass(r, PythonRule))
SETTINGS = Settings(target_torch=(2, 13))
PREFILTER = Prefilter.for_rules(RULES, SETTINGS)
PATH = Path("train.py")


def _refuse_all(text: bytes) -> bool:
    return False


def _dump(tree: ast.AST) -> str:
    """`ast.dump` with each placeholder's class named as `ast`'s own."""
    return re.sub(r"\bLazy(FunctionDef|AsyncFunctionDef|ClassDef)\(", r"\1(",
                  ast.dump(tree, include_attributes=True))


def _placeholders(tree: ast.Module) -> list[ast.stmt]:
    return [node for node in tree.body if is_placeholder(node)]


def _pending(node: ast.stmt) -> bool:
    return bool(node.__dict__.get("_pending"))


CASES = {
    "decorators": "@property\ndef a(self):\n    return 1\n\n\n@dec(\n    x,\n)\n"
                  "@other\nclass B(Base, metaclass=M):\n    x = 1\n\n    def m(self): pass\n",
    "a decorator's arguments at column 0": "@dec(\nx,\n)\ndef f():\n    pass\n",
    "a docstring with column-0 code": 'def f():\n    """Use it so:\n\ndef g():\n    pass\n'
                                      'x = 1\n"""\n    return 2\n\n\ndef h(): pass\n',
    "a module string holding code": 'TEMPLATE = """\ndef f():\n    pass\n"""\n\n\n'
                                    'def g():\n    return TEMPLATE\n',
    "top-level if and else": "if x:\n    def f(): pass\nelse:\n    def f(): return 1\n"
                             "def g():\n    pass\n",
    "try blocks": "try:\n    import a\nexcept ImportError:\n    a = None\nfinally:\n    pass\n"
                  "def f():\n    try:\n        pass\n    except E:\n        pass\n",
    "no newline at the end": "import os\n\ndef f():\n    return os.sep",
    "a comment after the last line": "def f():\n    return 1  # one\n\n# about g\n\ndef g():"
                                     "\n    return 'x'  # a string, then a comment\n",
    "tabs": "class C:\n\tdef m(self):\n\t\treturn 1\n\ndef f():\n\tif x:\n\t\tpass\n",
    "a semicolon": "def f(): x = 1; y = 2;\ndef g():\n    z = 3 ;  \n",
    "brackets at column 0": "def f():\n    return g(\n1,\n)\nx = [\n2,\n]\ndef h(): pass\n",
    "a backslash": "def f():\n    return 1 + \\\n2\ndef g():\n    pass\n",
    "async": "async def f():\n    await g()\n\nasync  def  h():\n    pass\n",
    "names like keywords": "else_ = 1\ndef f(): pass\nclass_ = 2\ndefault = 3\n",
    "a utf-8 coding cookie": "# -*- coding: utf-8 -*-\ndef f():\n    return 'é'\n",
    "non-ASCII names": "def größe():\n    return 1\ndef f():\n    ﬁ = 'ü'\n",
}


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("source", CASES.values(), ids=CASES.keys())
def test_placeholders_read_as_ast_parse_reads_the_file(source: str, newline: str) -> None:
    _same_as_ast(source.replace("\n", newline).encode())


def _own_files() -> list[Path]:
    return [*sorted((ROOT / "fixtures").rglob("*.py")),
            *sorted((ROOT / "src" / "cudalint" / "engine").rglob("*.py"))]


@pytest.mark.parametrize("path", _own_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_real_files_read_as_ast_parse_reads_them(path: Path) -> None:
    _same_as_ast(path.read_bytes())


def _same_as_ast(data: bytes) -> None:
    """Each placeholder's position is the real one before it is read, and the whole tree is
    `ast.parse`'s once they are read."""
    real = ast.parse(data)
    tree = lazy_ast.parse(data, _refuse_all)
    if tree is None:
        return
    nodes = {node.lineno: node for node in real.body}
    for node in _placeholders(tree):
        twin = nodes[node.lineno]
        known = node.__dict__
        assert (known["name"], known["end_lineno"], first_line(node)) == \
            (getattr(twin, "name", None), twin.end_lineno, first_line(twin))
        assert known.get("end_col_offset", twin.end_col_offset) == twin.end_col_offset
        assert _pending(node)
    assert _dump(tree) == _dump(real)
    assert not any(_pending(node) for node in tree.body)


def test_most_functions_of_a_real_file_stand_in() -> None:
    data = (ROOT / "src" / "cudalint" / "engine" / "first_pass" / "outline.py").read_bytes()
    tree = lazy_ast.parse(data, _refuse_all)
    assert tree is not None
    functions = [n for n in ast.parse(data).body
                 if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert len(_placeholders(tree)) == len(functions) > 20


def test_a_function_that_names_a_term_is_read_at_once() -> None:
    data = b"import torch\n\ndef f(x):\n    return x.cuda()\n\ndef g():\n    return 1\n"
    tree = lazy_ast.parse(data, PREFILTER.matches)
    assert tree is not None
    assert [type(n).__name__ for n in tree.body] == ["Import", "FunctionDef",
                                                     "LazyFunctionDef"]


ODD = {
    "a BOM": b"\xef\xbb\xbfdef f():\n    pass\n",
    "a form feed": b"def f():\n    pass\n\x0c\ndef g():\n    pass\n",
    "lone carriage returns": b"def f():\r    pass\rdef g():\r    pass\r",
    "a latin-1 cookie": "# coding: latin-1\ndef f():\n    return 'é'\n".encode("latin-1"),
    "barry_as_FLUFL": b"from __future__ import barry_as_FLUFL\ndef f():\n    pass\n",
    "nothing to stand in for": b"import os\nx = 1\n",
}


@pytest.mark.parametrize("data", ODD.values(), ids=ODD.keys())
def test_an_odd_file_is_read_whole(data: bytes) -> None:
    assert lazy_ast.parse(data, _refuse_all) is None


def test_a_future_import_of_annotations_is_no_reason_to_read_whole() -> None:
    data = b"from __future__ import annotations\n\ndef f(x: Tensor) -> int:\n    return 1\n"
    tree = lazy_ast.parse(data, _refuse_all)
    assert tree is not None and len(_placeholders(tree)) == 1


def test_unit_methods_of_a_placeholder_class_are_read_when_asked() -> None:
    source = (b"import torch\n\n\n@dataclass\nclass Trainer:\n\tscale = 2\n\n\t@staticmethod\n"
              b"\tdef log(message):\n\t\tprint(message)\n\n\tdef step(self, batch):\n"
              b"\t\treturn batch\n")
    tree = lazy_ast.parse(source, _refuse_all)
    assert tree is not None
    lazy_units, real_units = units_of(source, tree), units_of(source, ast.parse(source))
    assert _pending(lazy_units[0].node)
    assert [(u.name, u.first, u.last, u.text) for u in lazy_units[0].methods] == \
        [(u.name, u.first, u.last, u.text) for u in real_units[0].methods]
    assert [(u.name, u.first) for u in lazy_units[0].methods] == [("log", 8), ("step", 12)]


def test_assigned_to_reads_only_the_units_naming_the_name() -> None:
    source = (b"def make():\n    t = make_tensor(3)\n    return t\n\n\n"
              b"def other():\n    u = 1\n    if u:\n        t = 2\n    return u\n\n\n"
              b"def last():\n    v = 5\n")
    tree = lazy_ast.parse(source, _refuse_all)
    assert tree is not None
    hidden = Hidden(units_of(source, tree), source.decode())
    assert [ast.unparse(value) for value in hidden.assigned_to("t")] in (["make_tensor(3)",
                                                                           "2"],
                                                                          ["2", "make_tensor(3)"])
    assert [_pending(node) for node in tree.body] == [False, False, True]
    everything = Hidden(units_of(source, ast.parse(source)), source.decode()).assigned
    assert sorted(everything) == ["t", "u", "v"]
    for name, values in everything.items():
        assert [_dump(v) for v in hidden.assigned_to(name)] == [_dump(v) for v in values]


def _check(source: str, *, sparse: bool = True) -> list[tuple[str | None, str, int, int]]:
    result = lint_python(source.encode(), PATH, RULES, SETTINGS, prefilter=PREFILTER,
                         sparse=sparse)
    return [(f.code, f.message, f.location.row, f.location.column) for f in result.findings]


def _whole_error(source: str) -> list[tuple[str | None, str, int, int]]:
    found = _compiled(source.encode(), PATH)
    assert not isinstance(found, ast.Module)
    return [(found.code, found.message, found.location.row, found.location.column)]


MOVES = "import torch\n\nx = torch.zeros(3).cuda()\n\n\n"
SYNTAX_ERRORS = {
    "in a hidden function": MOVES + "def f():\n    return (1 +\n\n\ndef g():\n    pass\n",
    "in the last hidden function": MOVES + "def f():\n    pass\n\n\ndef g():\n    return 1 +\n",
    "an unterminated docstring": MOVES + 'def f():\n    """Doc.\n\n\ndef g():\n    pass\n',
    "in a docstring's column-0 line": MOVES + 'def f():\n    """\ndef g(:\n"""\n    return 1 +\n',
    "after a decorator": MOVES + "@staticmethod\n\nx = 1\n\ndef g():\n    pass\n",
    "a decorator alone at the end": MOVES + "def g():\n    pass\n\n@staticmethod\n",
    "an indented line at column 0": MOVES + "def f():\n    pass\n  x = 1\ndef g():\n    pass\n",
    "a stray else": MOVES + "def f():\n    pass\nelse:\n    pass\n",
    "before the hidden functions": "import torch\nx = torch.zeros(3).cuda(\n\ndef f():\n"
                                   "    pass\n",
}


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("source", SYNTAX_ERRORS.values(), ids=SYNTAX_ERRORS.keys())
def test_a_syntax_error_anywhere_is_the_same_error_line(source: str, newline: str) -> None:
    source = source.replace("\n", newline)
    assert _check(source) == _whole_error(source)


def test_an_error_only_a_compiler_sees_is_no_error_here_either() -> None:
    """`_symtable` refuses `nonlocal` at a function's top; `ast.parse` reads it."""
    source = MOVES + "def f():\n    nonlocal y\n    y = 1\n"
    assert _check(source) == _check(source, sparse=False)
    assert [code for code, *_ in _check(source)] == ["CUD102"]


DEEP = "-" * (MAX_DEPTH + 10) + "1"


def test_a_deep_unit_the_first_pass_hides_is_not_read_and_the_file_is_checked() -> None:
    """LibCST never reads it, so its depth cannot hurt: a function naming nothing, one naming
    a term only in its docstring, a method naming nothing in a class LibCST reads. `--fix`
    (and the editor) read the whole file, where it still makes the file an error line."""
    hidden = MOVES + f"def deep():\n    return {DEEP}\n"
    in_prose = MOVES + f'def deep():\n    """Not for .cuda() tensors."""\n    return {DEEP}\n'
    method = ("import torch\n\n\nclass Net:\n    def to_gpu(self, x):\n"
              "        return x.cuda()\n\n    def deep(self):\n"
              f"        return {DEEP}\n")
    for source in (hidden, in_prose, method):
        assert [code for code, *_ in _check(source)] == ["CUD102"]
        assert _check(source, sparse=False) == [(None, TOO_DEEP, 1, 1)]


def test_a_deep_unit_the_first_pass_looks_into_is_an_error_line() -> None:
    """One whose code names a term (`ast` reads it at once), or a name a relevant statement
    binds (read when the first pass asks)."""
    named = MOVES + f"def deep(x):\n    return x.cuda() * {DEEP}\n"
    followed = "import torch.cuda as tc\n\n\n" + f"def deep():\n    return tc, {DEEP}\n"
    for source in (named, followed):
        assert _check(source) == _check(source, sparse=False) == [(None, TOO_DEEP, 1, 1)]


def test_a_check_leaves_the_hidden_functions_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    trees: list[ast.Module | None] = []
    parse = lazy_ast.parse

    def kept(data: bytes, looked_into: Callable[[bytes], bool]) -> ast.Module | None:
        trees.append(parse(data, looked_into))
        return trees[-1]

    monkeypatch.setattr(lazy_ast, "parse", kept)
    source = MOVES + "def f():\n    return 1\n\n\nclass C:\n    def m(self):\n        pass\n"
    assert [code for code, *_ in _check(source)] == ["CUD102"]
    [tree] = trees
    assert tree is not None
    assert [_pending(node) for node in _placeholders(tree)] == [True, True]


def test_a_function_is_judged_by_its_own_lines_not_the_comments_after_it() -> None:
    """A piece runs to the next statement at column 0, so the comments after a function are
    in its piece; the first pass judges the function by the lines its placeholder spans, the
    text `outline.hidden_parts` reads of it (which then trusts the placeholder to name
    nothing)."""
    from cudalint.engine.first_pass.outline import named

    source = (b"import torch\n\n\ndef scale(x):\n    return x * 2\n\n"
              b"# the cuda path: x.cuda() below\n\n\ndef move(x):\n    return x.cuda()\n")
    tree = lazy_ast.parse(source, named(PREFILTER.within(source)))
    assert tree is not None
    assert [(node.name, node.end_lineno) for node in _placeholders(tree)] == [("scale", 5)]
    assert _dump(tree) == _dump(ast.parse(source))
    result = lint_python(source, PATH, RULES, SETTINGS, prefilter=PREFILTER)
    assert [(f.code, f.location.row) for f in result.findings] == [("CUD102", 11)]

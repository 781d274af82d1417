"""LibCST reads only the relevant functions (cudalint.engine.first_pass.sparse): the findings, and
their fixes, are those of a check that reads the whole file."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from cudalint.engine.contract import PythonRule
from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.first_pass.sparse import blank, leaves, source_segment, text_lines, units_of
from cudalint.engine.lint.python import PythonResult, lint_python
from cudalint.engine.walk.context import Settings
from cudalint.rules import all_rules

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RULES = tuple(r for r in all_rules() if issubclass(r, PythonRule))
SETTINGS = Settings(target_torch=(2, 13))
PREFILTER = Prefilter.for_rules(RULES, SETTINGS)

SOURCE = '''\
"""Training helpers."""
import torch


@torch.no_grad()
def evaluate(model, batch):
    return model(batch).mean()


class Trainer:
\tscale = 2

\t@staticmethod
\tdef log(message):
\t\tprint(message)

\tdef step(self, batch):
\t\treturn batch.cuda()
'''


def _check(source: str, *, sparse: bool, want_edits: bool = True) -> PythonResult:
    return lint_python(source.encode(), Path("train.py"), RULES, SETTINGS, prefilter=PREFILTER,
                       want_edits=want_edits, sparse=sparse)


def test_units_are_top_level_functions_classes_and_their_methods() -> None:
    units = units_of(SOURCE.encode(), ast.parse(SOURCE))
    assert [(u.name, u.first, u.last) for u in units] == [("evaluate", 5, 7), ("Trainer", 10, 18)]
    assert [(m.name, m.first, m.last) for m in units[1].methods] == [("log", 13, 15),
                                                                    ("step", 17, 18)]
    assert [u.name for u in leaves(units)] == ["evaluate", "log", "step"]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_blanking_keeps_every_other_line_where_it_was(newline: str) -> None:
    data = SOURCE.replace("\n", newline).encode()
    units = units_of(data, ast.parse(data))
    sparse = blank(data, [units[0], units[1].methods[0]])
    lines, before = sparse.splitlines(keepends=True), data.splitlines(keepends=True)
    assert len(lines) == len(before)
    end = newline.encode()
    # One bytes literal over the function's lines, its decorator included ...
    assert lines[4:7] == [b'b"""' + end, end, b'"""' + end]
    # ... and over the method's, at its indentation: its class stays valid
    assert lines[12:15] == [b'\tb"""' + end, end, b'"""' + end]
    kept = [i for i in range(len(lines)) if not 4 <= i <= 6 and not 12 <= i <= 14]
    assert [lines[i] for i in kept] == [before[i] for i in kept]
    ast.parse(sparse)


def test_irrelevant_functions_are_not_read_and_the_findings_are_the_same() -> None:
    sparse, whole = _check(SOURCE, sparse=True), _check(SOURCE, sparse=False)
    assert sparse.module is not None and whole.module is not None
    assert "model(batch)" not in sparse.module.code and "print(message)" not in sparse.module.code
    assert "batch.cuda()" in sparse.module.code
    assert [f.code for f in sparse.findings] == ["CUD102"]
    assert sparse.findings == whole.findings
    assert sparse.text == SOURCE


CALLERS = """\
import torch


def pick():
    return "cuda" if torch.cuda.is_available() else "cpu"


class Net(torch.nn.Module):
    def place(self):
        return self.cuda()


def build():
    net = Net()
    return net.to(pick())
"""


def test_a_function_naming_only_relevant_functions_and_classes_is_not_read() -> None:
    """No rule follows a call into the function it calls: `build` names nothing to look at."""
    sparse, whole = _check(CALLERS, sparse=True), _check(CALLERS, sparse=False)
    assert sparse.module is not None and "net.to(pick())" not in sparse.module.code
    assert sorted(f.code for f in sparse.findings) == ["CUD102", "CUD103"]
    assert sparse.findings == whole.findings


def test_an_import_a_hidden_function_uses_is_not_removed() -> None:
    """`torch.cuda.current_device()` becomes `current_device()`: `import torch` goes only when
    nothing else uses it, and `helper` (not read by LibCST) does."""
    tail = "\n\ndef main():\n    return torch.cuda.current_device()\n"
    used = "import torch\n\n\ndef helper(x):\n    return torch.zeros_like(x)\n" + tail
    unused = "import torch\n\n\ndef helper(x):\n    return x * 2\n" + tail
    for source, removed in ((used, False), (unused, True)):
        sparse, whole = _check(source, sparse=True), _check(source, sparse=False)
        assert sparse.module is not None and "helper" not in sparse.module.code
        assert sparse.findings == whole.findings
        fix = sparse.findings[0].fix
        assert fix is not None
        assert any(e.content == "" and e.location.row == 1 for e in fix.edits) is removed


def test_a_value_assigned_in_a_hidden_function_is_still_followed() -> None:
    """CUD602 follows `t = torch.randn(...)`, assigned once in the module, to `t.mode()`."""
    source = ("import torch\n\n\ndef make():\n    t = torch.randn(4, 4)\n    return t\n\n\n"
              "def use():\n    return t.mode()\n")
    sparse, whole = _check(source, sparse=True), _check(source, sparse=False)
    assert sparse.module is not None and "randn" not in sparse.module.code
    assert [f.code for f in sparse.findings] == ["CUD602"]
    assert sparse.findings == whole.findings
    twice = source.replace("    return t\n", "    t = torch.randn(2)\n    return t\n")
    assert _check(twice, sparse=True).findings == _check(twice, sparse=False).findings == []


def test_whole_file_facts_see_the_hidden_functions() -> None:
    """CUD601 reports a float64 default only in a file that uses a device (`"mps"` here, in a
    function LibCST does not read)."""
    source = ("import torch\n\ntorch.set_default_dtype(torch.float64)\n\n\n"
              "def where():\n    return 'mps'\n")
    sparse = _check(source, sparse=True)
    assert [f.code for f in sparse.findings] == ["CUD601"]
    assert sparse.findings == _check(source, sparse=False).findings
    assert _check(source.replace("'mps'", "'cpu'"), sparse=True).findings == []


def test_reused_units_are_not_read_and_have_no_findings() -> None:
    """What an editor's re-check asks: `step` is known, so it is neither read nor reported;
    every other leaf unit is complete in the result."""
    source = SOURCE + "\n\ndef move(x):\n    return x.cuda()\n"
    result = lint_python(source.encode(), Path("train.py"), RULES, SETTINGS,
                         prefilter=PREFILTER, reuse=lambda unit: unit.name == "step")
    assert [u.name for u in result.units] == ["evaluate", "log", "step", "move"]
    assert [u.name for u in result.checked] == ["evaluate", "log", "move"]
    assert [(f.code, f.location.row) for f in result.findings] == [("CUD102", 22)]


MODULE_LEVEL = """\
\"\"\"Data loading.\"\"\"
import os

WORKERS = 2
TABLE = {
    "relu": 1,
    "gelu": 2,
}
train_kwargs = {"batch_size": 64}
cuda_kwargs = {"pin_memory": True}
train_kwargs.update(cuda_kwargs)
loader = DataLoader(ds, **train_kwargs)
extra = {"num_workers": 2}
pinned = DataLoader(ds, pin_memory=True, **extra)
extra.update(timeout=5)
a = 1; b = 2

if __name__ == "__main__":
    print(TABLE, os.getcwd())
"""


def test_module_level_statements_outside_every_flow_are_not_read() -> None:
    """The table is read only by the `__main__` block, which names nothing either. Kept:
    `loader` reads what `train_kwargs.update(cuda_kwargs)` changed (CUD603 follows it back to
    the `pin_memory` set there), and
    `extra.update(...)` changes what the reported `pinned` reads; `a = 1; b = 2` shares its
    line; `WORKERS = 2` follows the imports (a fix's import looks at it)."""
    sparse, whole = _check(MODULE_LEVEL, sparse=True), _check(MODULE_LEVEL, sparse=False)
    assert sparse.module is not None
    code = sparse.module.code
    assert '"relu": 1' not in code and "print(TABLE" not in code
    for kept in ('"""Data loading."""', 'train_kwargs = {"batch_size"', "loader = DataLoader",
                 'extra = {"num_workers"', "extra.update(timeout=5)", "a = 1; b = 2",
                 "WORKERS = 2"):
        assert kept in code
    assert [(f.code, f.location.row) for f in sparse.findings] == [("CUD603", 10),
                                                                   ("CUD603", 14)]
    assert sparse.findings == whole.findings


def test_statements_among_the_imports_and_the_docstring_are_read() -> None:
    """A fix's import goes after the module's head (its imports; or its docstring and dunder
    assignments): the head stays in LibCST's view, with the statement after it."""
    source = ('"""Tools."""\nimport sys\nsys.path.insert(0, "lib")\nimport torch\n\n'
              'LIMIT = 3\nRETRIES = 2\n\n\ndef run(x):\n    return x.cuda()\n')
    sparse = _check(source, sparse=True)
    assert sparse.module is not None
    assert 'sys.path.insert(0, "lib")' in sparse.module.code
    assert "LIMIT = 3" in sparse.module.code and "RETRIES = 2" not in sparse.module.code
    assert sparse.findings == _check(source, sparse=False).findings
    bare = ('"""Tools."""\n__all__ = ["run"]\nLIMIT = 3\nRETRIES = 2\n\n\n'
            'def run(x):\n    return x.cuda()\n')
    bare_sparse = _check(bare, sparse=True)
    assert bare_sparse.module is not None
    assert all(kept in bare_sparse.module.code for kept in ('"""Tools."""', "__all__", "LIMIT"))
    assert "RETRIES = 2" not in bare_sparse.module.code
    assert bare_sparse.findings == _check(bare, sparse=False).findings


def test_a_hidden_assignment_still_binds_its_name_for_the_fixes() -> None:
    """A module-level `pick_device = ...` that LibCST does not read still keeps a fix from
    calling the helper under that name."""
    source = ("import torch\n\n\ndef train(model):\n    return model.to('cuda')\n\n\n"
              "pick_device = None\n")
    sparse, whole = _check(source, sparse=True), _check(source, sparse=False)
    assert sparse.module is not None and "pick_device = None" not in sparse.module.code
    assert sparse.findings == whole.findings
    assert _check(source.replace("pick_device = None", "unused = None"), sparse=True).findings \
        != sparse.findings


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py")), ids=lambda p: p.name)
def test_fixtures_give_the_same_findings_and_fixes(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert _check(source, sparse=True).findings == _check(source, sparse=False).findings


@pytest.mark.parametrize("text", [
    "x = 1\r\ny = (a,\r\n  b)\rz = 'é' + \"ü\"\x0c\nw = [\n1]",
    "a = 1\n\x0cb = (2,\n3)\n",
    *(path.read_text(encoding="utf-8") for path in sorted(FIXTURES.rglob("*.py"))[:6]),
], ids=lambda text: text[:12])
def test_an_expression_is_cut_from_the_text_as_ast_cuts_it(text: str) -> None:
    """Line endings of every kind, a form feed (which ends no line), and non-ASCII text
    (the columns count bytes)."""
    lines = text_lines(text)
    expressions = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.expr)]
    assert expressions
    assert all(source_segment(lines, n) == ast.get_source_segment(text, n) for n in expressions)


TRAINER = """\
import torch


@functools.lru_cache
def scaled(a,
           b):
    return a * b


class Trainer:
\tdef log(self, message):
\t\tprint(message)

\tdef step(self, batch):
\t\treturn batch.cuda()
"""
STAND_INS = {
    "decorators and tabs": TRAINER.encode(),
    "windows line endings": TRAINER.replace("\n", "\r\n").encode(),
    "old Mac line endings": TRAINER.replace("\n", "\r").encode(),
    "no line ending at the end": (TRAINER + "\n\ndef last():\n    return 2").encode(),
    "form feeds": TRAINER.replace("\n\n\nclass", "\n\x0c\nclass")
                         .replace("@functools", "\x0c@functools").encode(),
    "latin-1, declared": ("# -*- coding: latin-1 -*-\n" + TRAINER)
    .replace("print(message)", "print('été', message)").encode("latin-1"),
    "a hidden function first": b"def scale(a):\n    return a * 2\n\n\n"
                               b"def run(x):\n    return x.cuda()\n",
    "a one-line hidden function first": b"def scale(a): return a * 2\n"
                                        b"def run(x):\n    return x.cuda()\n",
    "a hidden function before the last import": b"import os\n\ndef home():\n"
                                                b"    return os.getcwd()\n\nimport torch\n\n\n"
                                                b"def run(x):\n    return x.cuda()\n",
    "a hidden function right after the imports": b"import os\nimport torch\ndef home():\n"
                                                 b"    return os.getcwd()\nx = y.cuda()\n",
    "a class whose methods are all hidden": b"import torch\n\n\nclass Net(torch.nn.Module):\n"
                                            b"    def size(self):\n        return 1\n\n"
                                            b"    def name(self):\n        return 'net'\n"
                                            b"    weights = torch.zeros(2).cuda()\n",
}


@pytest.mark.parametrize("data", STAND_INS.values(), ids=STAND_INS.keys())
def test_a_hidden_unit_stands_in_as_one_bytes_literal_and_the_result_is_the_same(
        data: bytes) -> None:
    """Findings, positions and fix edits (the replacement, and the import placed after the
    module's head, which a stand-in ends as its unit does) are a whole read's."""
    sparse = lint_python(data, Path("train.py"), RULES, SETTINGS, prefilter=PREFILTER,
                         want_edits=True)
    whole = lint_python(data, Path("train.py"), RULES, SETTINGS, prefilter=PREFILTER,
                        want_edits=True, sparse=False)
    assert sparse.module is not None and 'b""' in sparse.module.code
    assert [line for line in sparse.module.code.splitlines() if "return" in line] \
        == [line for line in data.decode(sparse.module.encoding).splitlines()
            if "return" in line and "cuda" in line]
    assert [f.code for f in sparse.findings] == ["CUD102"]
    fix = sparse.findings[0].fix
    assert fix is not None and any("import" in edit.content for edit in fix.edits)
    assert sparse.findings == whole.findings


def test_a_stand_in_is_no_docstring_of_its_module_or_class() -> None:
    source = b"def scale(a):\n    return a * 2\n\n\nclass Net:\n    def size(self):\n" \
             b"        return 1\n\n    def name(self): return 'net'\n"
    units = units_of(source, ast.parse(source))
    blanked = blank(source, [units[0], *units[1].methods])
    assert blanked.splitlines() == [b'b"""', b'"""', b"", b"", b"class Net:", b'    b"""',
                                    b'"""', b"", b'    b""']
    module, tree = cst.parse_module(blanked), ast.parse(blanked)
    net = module.body[1]
    assert isinstance(net, cst.ClassDef) and isinstance(tree.body[1], ast.ClassDef)
    assert module.get_docstring() is None and net.get_docstring() is None
    assert ast.get_docstring(tree) is None and ast.get_docstring(tree.body[1]) is None


GUARDED = {
    "module exit": (
        "import sys\n\nimport numpy as np\nimport torch\n\n"
        "HAS_GPU = torch.cuda.is_available()\n\nif not HAS_GPU:\n    sys.exit('needs a GPU')\n\n"
        "TABLE = {'a': 1}\n\nx = torch.from_numpy(np.zeros(3)).to('cuda')\n"),
    "attribute set in a method": (
        "import numpy as np\nimport torch\n\n\nclass Runner:\n    def __init__(self):\n"
        "        self.use_cuda = torch.cuda.is_available()\n        self.steps = 0\n\n"
        "    def run(self):\n        if self.use_cuda:\n"
        "            return torch.from_numpy(np.zeros(3)).to('cuda')\n        return None\n"),
    "toolkit check": (
        "import numpy as np\nimport torch\nfrom torch.utils.cpp_extension import CUDA_HOME\n\n"
        "BUILT = CUDA_HOME is not None\n\n\ndef helper():\n    return 1\n\n\n"
        "def run():\n    if BUILT:\n        return torch.from_numpy(np.zeros(3)).to('cuda')\n"),
}


@pytest.mark.parametrize("name", sorted(GUARDED))
def test_a_finding_keeps_its_guard_whichever_rules_run(name: str) -> None:
    """The guard's code names none of CUD601's terms; it is read all the same."""
    rules = [r for r in all_rules() if issubclass(r, PythonRule) and r.code == "CUD601"]
    data = GUARDED[name].encode()
    prefilter = Prefilter.for_rules(rules, Settings())
    results = [lint_python(data, Path("guarded.py"), rules, Settings(), prefilter=prefilter,
                           sparse=sparse) for sparse in (True, False)]
    found = [[(f.code, f.location.row, f.severity) for f in r.findings] for r in results]
    assert found[0] == found[1]
    assert [f.guarded for f in results[0].findings] == [True]


# The file names the rules' terms only where no rule reports: a function's docstring and
# comments, a method's docstring.
NAMING_ONLY_IN_PROSE = '''\
"""Data loading."""
import torch


def load(path):
    """Read a batch; the caller moves it with `.cuda()` or `.to("mps")`."""
    # not x.cuda() here: the loader stays on the CPU
    return torch.from_numpy(read_array(path))


class Batches:
    def __iter__(self):
        """Yields tensors for the `cuda` device, or any other."""
        return iter([])
'''


def _parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    import cudalint.engine.lint.python as engine

    parsed: list[bytes] = []
    parse = engine._parse_cst

    def recording(source: bytes, path: Path) -> cst.Module | object:
        parsed.append(source)
        return parse(source, path)

    monkeypatch.setattr(engine, "_parse_cst", recording)
    return parsed


def test_libcst_reads_nothing_where_no_statement_names_a_term(
        monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = _parses(monkeypatch)
    sparse = _check(NAMING_ONLY_IN_PROSE, sparse=True)
    assert parsed == []
    assert sparse.findings == [] == _check(NAMING_ONLY_IN_PROSE, sparse=False).findings
    assert len(parsed) == 1  # the whole read parsed it, and found nothing either


def test_a_guard_alone_is_no_term(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a selection whose terms the file does not name, a statement made of what guards
    are made of (`torch.cuda.is_available()`) gives LibCST nothing to read: a guard only
    lowers the severity of a finding that some other statement makes."""
    source = ("import torch\n\nHAS_GPU = torch.cuda.is_available()\n\n\n"
              "def scale(x):\n    return x * 2 if HAS_GPU else x\n")
    rules = tuple(r for r in RULES if r.code == "CUD601")
    prefilter = Prefilter.for_rules(rules, SETTINGS)
    parsed = _parses(monkeypatch)
    result = lint_python(source.encode(), Path("gpu.py"), rules, SETTINGS, prefilter=prefilter)
    assert (result.findings, parsed) == ([], [])
    doubled = source.replace("x * 2", "x.double().cuda()")
    found = lint_python(doubled.encode(), Path("gpu.py"), rules, SETTINGS, prefilter=prefilter)
    assert [(f.code, f.location.row, f.guarded) for f in found.findings] == \
        [("CUD601", 7, True)]


def test_an_editor_check_of_a_file_naming_no_term_covers_every_unit() -> None:
    """The language server replaces each unit's findings it kept by those of the units the
    result says it checked: all of them, so a unit that lost its last term loses its old
    findings."""
    result = lint_python(NAMING_ONLY_IN_PROSE.encode(), Path("train.py"), RULES, SETTINGS,
                         prefilter=PREFILTER, reuse=lambda unit: unit.name == "load")
    assert [u.name for u in result.units] == ["load", "__iter__"]
    assert result.checked == result.units
    assert result.findings == []


# A method naming no term of the rules but an alias an import of a term binds: the alias counts
# as a term (`sync` is `torch.cuda.synchronize`), whatever shape the method has. `log` names
# nothing and is not read.
ALIAS_HEAD = """\
import functools

from torch.cuda import synchronize as sync
import torch.cuda as tc


"""
ALIASED_METHODS = {
    "method": ("class Trainer:\n    def step(self, x):\n        sync()\n        return x\n",
               [("CUD105", 9, 9)]),
    "async method": ("class Trainer:\n    async def step(self):\n        sync()\n",
                     [("CUD105", 9, 9)]),
    "decorated method": ("class Trainer:\n    @functools.lru_cache\n    def where(self):\n"
                         "        return tc.current_device()\n", [("CUD105", 10, 16)]),
    "property": ("class Trainer:\n    @property\n    def device(self):\n"
                 "        return tc.current_device()\n", [("CUD105", 10, 16)]),
    "static method": ("class Trainer:\n    @staticmethod\n    def wait():\n        sync()\n",
                      [("CUD105", 10, 9)]),
    "nested class": ("class Trainer:\n    class Inner:\n        def flush(self):\n"
                     "            sync()\n", [("CUD105", 10, 13)]),
    "function in a method": ("class Trainer:\n    def step(self):\n        def inner():\n"
                             "            sync()\n        return inner\n",
                             [("CUD105", 10, 13)]),
    "second of two classes": ("class Plain:\n    def size(self):\n        return 1\n\n\n"
                              "class Trainer:\n    def step(self):\n        sync()\n",
                              [("CUD105", 14, 9)]),
}
LOG = "\n    def log(self, message):\n        print(message)\n"


@pytest.mark.parametrize("shape", sorted(ALIASED_METHODS))
def test_a_method_using_an_aliased_cuda_import_is_read(shape: str) -> None:
    """The first pass (`hidden_parts` for a sparse read, `outline`'s skipped methods for a
    whole one) reads a method that names only an import's alias; the finding is there in
    both reads, at its place, and the method that names nothing is still left unread."""
    body, expected = ALIASED_METHODS[shape]
    source = ALIAS_HEAD + body + LOG
    for sparse in (True, False):
        result = _check(source, sparse=sparse)
        assert [(f.code, f.location.row, f.location.column) for f in result.findings] \
            == expected, (shape, sparse)
    sparse_read = _check(source, sparse=True)
    assert sparse_read.module is not None
    code = sparse_read.module.code
    assert "print(message)" not in code
    assert ("sync()" in code) or ("tc.current_device()" in code)
    if shape == "second of two classes":
        assert "return 1" not in code


def test_an_alias_of_an_import_naming_no_term_does_not_make_a_method_read() -> None:
    """`nn` in `from torch import cuda, nn` binds nothing the rules look for."""
    source = ("from torch import cuda, nn\n\n\nclass Net:\n    def layer(self):\n"
              "        return nn.Linear(2, 2)\n\n    def place(self):\n"
              "        return cuda.current_device()\n")
    sparse = _check(source, sparse=True)
    assert sparse.module is not None
    assert "nn.Linear" not in sparse.module.code and "cuda.current_device" in sparse.module.code
    assert [(f.code, f.location.row) for f in sparse.findings] == [("CUD105", 9)]
    assert sparse.findings == _check(source, sparse=False).findings

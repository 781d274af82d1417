"""The pre-filter: files no enabled rule could report on are not parsed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cudalint.engine.contract import PythonRule
from cudalint.engine.first_pass import sparse
from cudalint.engine.first_pass.outline import blanked
from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.lint.python import lint_python
from cudalint.engine.walk.context import Settings
from cudalint.rules import all_rules, rule_by_code


def _prefilter(*codes: str, settings: Settings | None = None) -> Prefilter:
    rules = [rule_by_code(code) for code in codes]
    return Prefilter.for_rules([r for r in rules if r], settings or Settings())


def test_substring_keywords():
    prefilter = _prefilter("CUD102")
    assert prefilter.matches(b"model = model.cuda()\n")
    assert not prefilter.matches(b"model = model.to(device)\n")


def test_package_roots_are_whole_words():
    """`cute` (CUTLASS's DSL) is a CUD201 package: `execute` must not make a file parsed."""
    prefilter = _prefilter("CUD201")
    assert not prefilter.matches(b"def execute(plan):\n    return compute(plan)\n")
    assert prefilter.matches(b"import cutlass.cute as cute\n")
    assert prefilter.matches(b"mod = importlib.import_module('cupy')\n")


def test_ops_without_mps_kernel_are_named_by_their_calls():
    prefilter = _prefilter("CUD602", settings=Settings(target_torch=(2, 13)))
    assert prefilter.matches(b"w = torch.linalg.eig(a)\n")
    assert not prefilter.matches(b"import torch\ny = torch.matmul(model(input), w)\n")


def test_project_without_cuda_extension_never_parses_for_cud305():
    assert not _prefilter("CUD305").matches(b"from pkg import _C\n")
    with_extension = Settings(extension_modules=frozenset({"pkg._C"}))
    assert _prefilter("CUD305", settings=with_extension).matches(b"from pkg import _C\n")


def test_unmatched_file_is_not_parsed(tmp_path):
    rule = rule_by_code("CUD102")
    assert rule is not None
    broken = b"def broken(:\n"
    skipped = lint_python(broken, Path("x.py"), [rule], Settings(),  # type: ignore[list-item]
                          prefilter=_prefilter("CUD102"))
    assert skipped.module is None and skipped.findings == []
    parsed = lint_python(broken + b"x.cuda()\n", Path("x.py"), [rule],  # type: ignore[list-item]
                         Settings(), prefilter=_prefilter("CUD102"))
    assert parsed.findings[0].code is None  # the syntax error of a file that was parsed


def test_load_is_a_whole_word():
    prefilter = _prefilter("CUD111")
    assert prefilter.matches(b"state = torch.load(path)\n")
    assert not prefilter.matches(b"urllib.request.urlretrieve(url)  # download, then loader\n")


def test_integer_ordinals_and_rank_names():
    prefilter = _prefilter("CUD113")
    for source in (b"x.to(0)\n", b"torch.zeros(3, device=1)\n", b"x.to(args.local_rank)\n",
                   b"x.to(LOCAL_RANK)\n", b"model.to(localRank)\n", b"d = torch.device(gpu)\n"):
        assert prefilter.matches(source), source
    assert not prefilter.matches(b"x = x.to(device)\ny = y.to(torch.float16)\n")


def _code_matches(prefilter: Prefilter, source: str) -> bool:
    """Whether the first statement of `source` (a function or class) names a term."""
    node = ast.parse(source).body[0]
    return prefilter.matches_code(source.encode(), node, sparse.first_line(node))


_PROSE_ONLY = {
    "docstring": 'def f(x):\n    """Moves x to CUDA with x.cuda()."""\n    return x\n',
    "comment": "def f(x):\n    # x.cuda() would be faster\n    return x  # .cuda( too\n",
    "nested docstring": (
        "class Net:\n    '''Net.'''\n    def forward(self, x):\n"
        "        '''Call .cuda() first.'''\n        if x:\n            'x.cuda()'\n"
        "        return x\n"
    ),
    "docstring on the def line": "def f(x): 'x.cuda()'; return x\n",
    "in a try block": "def f(x):\n    try:\n        '.cuda()'\n    finally:\n        pass\n",
}
_CODE = {
    "a call after a docstring": 'def f(x):\n    """Doc."""\n    return x.cuda()\n',
    "a call after a docstring on one line": "def f(x): 'doc'; return x.cuda()\n",
    "a hash inside a string": "def f(x):\n    s = '#'; return x.cuda()\n",
    "a quote inside a comment": "def f(x):\n    # don't\n    return x.cuda()\n",
    "an f-string's code": "def f(x):\n    return f'{x.cuda()}'\n",
    "a decorator": "@x.cuda()\ndef f():\n    '''doc'''\n",
    "a triple-quoted value": "def f():\n    s = '''#\n'''; return s.cuda()\n",
}


@pytest.mark.parametrize("source", _PROSE_ONLY.values(), ids=_PROSE_ONLY.keys())
def test_a_function_naming_a_term_only_in_prose_does_not_match(source):
    prefilter = _prefilter("CUD102")
    assert prefilter.matches(source.encode())  # the file-wide test still reads everything
    assert not _code_matches(prefilter, source)


@pytest.mark.parametrize("source", _CODE.values(), ids=_CODE.keys())
def test_a_function_naming_a_term_in_code_matches(source):
    assert _code_matches(_prefilter("CUD102"), source)


def test_op_names_count_where_called_or_imported():
    prefilter = _prefilter("CUD602", settings=Settings(target_torch=(2, 13)))
    for source in ("def f(x):\n    return x.mode(dim=1)\n",
                   "def f(x):\n    return torch.mode (\n        x)\n",
                   "def f(x):\n    from torch import mode as m\n    return m(x)\n"):
        assert _code_matches(prefilter, source), source
    for source in ("def f(self, mode):\n    self.mode = mode\n",
                   "def f(w):\n    init(w, mode='fan_in')\n",
                   "def f(x):\n    '''Like torch.mode(x).'''\n    return x\n"):
        assert not _code_matches(prefilter, source), source


def test_a_function_named_only_in_prose_is_blanked_and_the_findings_stay(tmp_path):
    """End to end: LibCST does not read the function whose docstring alone names CUDA, and
    the file's findings are those of a whole read."""
    source = (
        b"import torch\n\n\ndef documented(x):\n    '''Returns x.cuda() on a GPU.'''\n"
        b"    return x  # not x.cuda()\n\n\ndef moving(x):\n    '''Doc.'''\n"
        b"    return x.cuda()\n"
    )
    tree = ast.parse(source)
    prefilter = _prefilter("CUD102")
    assert [unit.name for unit in blanked(source, tree, prefilter)] == ["documented"]
    rule = rule_by_code("CUD102")
    assert rule is not None
    sparse_run = lint_python(source, Path("x.py"), [rule], Settings(),  # type: ignore[list-item]
                             prefilter=prefilter)
    whole_run = lint_python(source, Path("x.py"), [rule], Settings(),  # type: ignore[list-item]
                            prefilter=prefilter, sparse=False)
    assert [f.location.row for f in sparse_run.findings] == [11]
    assert sparse_run.findings == whole_run.findings


def test_data_parallel_counts_where_called():
    prefilter = _prefilter("CUD702")
    assert _code_matches(prefilter, "def f(m):\n    return nn.DataParallel(m)\n")
    assert _code_matches(prefilter, "def f(m):\n    return DistributedDataParallel(\n        m)\n")
    assert not _code_matches(prefilter, "def f(m):\n    if isinstance(m, nn.DataParallel):\n"
                                        "        return m.module\n")
    assert prefilter.matches(b"from torch.nn.parallel import DistributedDataParallel as DDP\n")


_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize("path", sorted(_FIXTURES.rglob("*.py")), ids=lambda p: p.name)
def test_narrowed_to_a_file_it_answers_as_before_on_each_of_its_parts(path):
    """`within(data)` keeps only the terms the file names: every function, class and
    statement of the file matches exactly as with all the terms."""
    full = Prefilter.for_rules([r for r in all_rules() if issubclass(r, PythonRule)],
                               Settings(target_torch=(2, 13)))
    data = path.read_bytes()
    narrowed = full.within(data)
    assert (narrowed is not None) is full.matches(data)
    if narrowed is None:
        return
    assert len(narrowed.substrings) + len(narrowed.words) + len(narrowed.calls) < \
        len(full.substrings) + len(full.words) + len(full.calls)
    lines = data.splitlines(keepends=True)
    for node in ast.walk(ast.parse(data)):
        if not isinstance(node, ast.stmt):
            continue
        first = sparse.first_line(node)
        text = b"".join(lines[first - 1 : node.end_lineno])
        assert narrowed.matches(text) is full.matches(text)
        assert narrowed.matches_code(text, node, first) is full.matches_code(text, node, first)


def test_a_file_naming_no_term_is_not_narrowed_but_refused():
    assert _prefilter("CUD102").within(b"import numpy\nx = numpy.zeros(3)\n") is None


def test_built_once_for_the_same_rules_and_settings_and_again_when_they_change():
    rules = [r for r in all_rules() if issubclass(r, PythonRule)]
    settings = Settings(extension_modules=frozenset({"pkg._C"}))
    first = Prefilter.for_rules(rules, settings)
    assert b"_C" in first.words
    assert Prefilter.for_rules(rules, Settings(extension_modules=frozenset({"pkg._C"}))) is first
    settings.extension_modules = frozenset()  # the caller's object changes after the build
    assert b"_C" not in Prefilter.for_rules(rules, Settings()).words
    other = Prefilter.for_rules(rules, Settings(extension_modules=frozenset({"pkg._ext"})))
    assert b"_ext" in other.words and b"_C" not in other.words
    assert Prefilter.for_rules(rules[:3], Settings()) != Prefilter.for_rules(rules, Settings())

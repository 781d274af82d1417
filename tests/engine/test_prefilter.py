"""The pre-filter: files no enabled rule could report on are not parsed."""

from __future__ import annotations

from pathlib import Path

from cudalint.engine.context import Settings
from cudalint.engine.prefilter import Prefilter
from cudalint.engine.python import lint_python
from cudalint.rules import rule_by_code


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

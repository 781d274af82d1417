"""Fix edits (JSON, SARIF, the language server) cost little per finding: the import layout
comes from the first pass's statement starts, not from generating the module's code, and an
import's last use is counted only in the statements that name it. The edits are those of the
whole-module computation, which stays for a module without a first pass."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

import libcst as cst
import pytest

from cudalint.engine.contract import PythonRule
from cudalint.engine.first_pass.outline import outline
from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.first_pass.sparse import text_lines
from cudalint.engine.fixes import fixer, imports
from cudalint.engine.fixes.fixer import EditPlanner
from cudalint.engine.lint import python
from cudalint.engine.lint.python import PythonResult, lint_python
from cudalint.engine.walk.context import Settings
from cudalint.rules import all_rules

FIXTURES = sorted((Path(__file__).resolve().parents[2] / "fixtures").rglob("*.py"))
RULES = tuple(r for r in all_rules() if issubclass(r, PythonRule))
SETTINGS = Settings(target_torch=(2, 13))
PREFILTER = Prefilter.for_rules(RULES, SETTINGS)

_LAYOUTS = {
    "header comments, footer comments": (
        "#!/usr/bin/env python\n# Train a model.\n\nimport os\n\nimport torch\n\n\n"
        "def main():\n    return torch.zeros(2).cuda()\n\n# end of file\n\n"
    ),
    "docstring, future import, dunders": (
        '"""Helpers."""\nfrom __future__ import annotations\n\n__all__ = ["run"]\n'
        "import torch\nrun = torch.device('cuda')\n"
    ),
    "decorators with comments between": (
        "import functools\n\n# cached\n@functools.cache\n# twice\n@staticmethod\n"
        "def g(\n    a,\n):\n    return a.to('cuda')\n"
    ),
    "semicolons and continuations": (
        "import torch; import os\na = 1; b = torch.zeros(\n    3, device='cuda')\n"
        "x = 1 + \\\n    2\nif x:\n    y = 'cuda'\nelse: y = 'cpu'\n"
    ),
    "windows newlines": "import torch\r\n\r\ndef f(x):\r\n    return x.cuda()\r\n",
    "old mac newlines": "import torch\r\rdef f(x):\r    return x.cuda()\r",
    "no trailing newline": "import torch\nmodel = torch.nn.Linear(2, 2).cuda()",
    "a comment last, no trailing newline": "import torch\nx = torch.ones(1).cuda()\n# done",
    "only comments": "# nothing here\n\n# yet\n",
    "empty": "",
    "only a docstring": '"""Nothing to see."""\n',
}


def _training_module(functions: int) -> str:
    """A training module with `functions` steps, most with fixable findings, some whose fix
    removes an import's last use, and some functions the first pass hides from LibCST."""
    parts = ['"""Training steps."""\n\nimport os\n\nimport torch\n'
             "from torch.cuda.amp import GradScaler, autocast\n\n"
             "SCALER = GradScaler()\n"]
    for index in range(functions):
        body = (
            "    inputs = inputs.cuda()\n",
            "    torch.cuda.synchronize()\n",
            "    where = torch.device('cuda')\n",
            f"    print('step {index}', os.getpid())\n",
        )[index % 4]
        parts.append(f"\n\ndef step_{index}(model, inputs):\n"
                     f'    """Step {index}: "torch" in prose is no use."""\n{body}'
                     "    return model(inputs)\n")
    return "".join(parts)


_GENERATED = {
    "one torch use left": "import torch\n\n\ndef device():\n    return torch.device('cuda')\n",
    "torch used in an annotation string": (
        "import torch\n\n\ndef pick(x: 'torch.Tensor'):\n    return torch.device('cuda')\n"
    ),
    # In another function than the fix: one whose text does not spell `torch` is read too.
    "torch used in an escaped annotation string": (
        "import torch\n\n\ndef pick():\n    return torch.device('cuda')\n\n\n"
        "def move(x: '\\x74orch.Tensor'):\n    return x.cuda()\n"
    ),
    "torch used in a string continued over two lines": (
        "import torch\n\n\ndef pick():\n    return torch.device('cuda')\n\n\n"
        "def move(x: 'tor\\\nch.Tensor'):\n    return x.cuda()\n"
    ),
    "torch named only in prose and comments": (
        "import torch\n\n\ndef pick():\n    # torch picks the device\n"
        "    print('torch: ready')\n    return torch.device('cuda')\n"
    ),
    "scaler import used once": (
        "import torch\nfrom torch.cuda.amp import GradScaler, autocast\n\n"
        "scaler = GradScaler()\n"
    ),
    "10 steps": _training_module(10),
    "40 steps": _training_module(40),
    "120 steps": _training_module(120),
}


def _sources() -> list[tuple[str, str]]:
    return ([(name, text) for name, text in {**_LAYOUTS, **_GENERATED}.items()]
            + [(str(path.relative_to(path.parents[1])), path.read_text(encoding="utf-8"))
               for path in FIXTURES])


_SOURCES = _sources()


def _layouts(source: str) -> tuple[imports.Layout, imports.Layout]:
    """The layout from the first pass's starts, and the one from generated code."""
    module = cst.parse_module(source)
    first_pass = outline(source.encode(), module, None, ast.parse(source))
    assert first_pass is not None
    return (imports.Layout(module, first_pass.starts, text_lines(source)),
            imports.Layout(module))


@pytest.mark.parametrize(("name", "source"), _SOURCES, ids=[name for name, _ in _SOURCES])
def test_the_layout_from_the_first_pass_is_the_generated_one(name: str, source: str) -> None:
    placed, generated = _layouts(source)
    assert placed.lines is not None and generated.lines is None  # the fast way was taken
    assert placed.statements == generated.statements
    assert placed.line_count == generated.line_count
    # LibCST's code drops a last lone `\r`; the edits apply to the text, which has it.
    assert placed.ends_with_newline is source.endswith(("\n", "\r"))


def test_a_form_feed_counts_no_line() -> None:
    """CPython and LibCST end no line at a form feed (`str.splitlines` does): the import below
    one is on row 3."""
    source = "import os\n\x0c\nimport torch\n\nDEVICE = torch.device('cuda')\nos.sep\n"
    placed, _generated = _layouts(source)
    assert [s.first for s in placed.statements] == [0, 2, 4, 5]
    result = _check(source, sparse=True)
    fix = result.findings[0].fix
    assert fix is not None
    assert [(e.content, e.location.row, e.end_location.row) for e in fix.edits[1:]] == [
        ("", 3, 4), ("from cudalint.device import pick_device\n", 4, 4)]


@pytest.mark.parametrize(("name", "source"), _SOURCES, ids=[name for name, _ in _SOURCES])
def test_uses_counted_by_statement_are_the_whole_module_count(name: str, source: str) -> None:
    placed, generated = _layouts(source)
    whole = imports.uses(placed.module)
    by_statement, by_module = imports.ModuleUses(placed), imports.ModuleUses(generated)
    lines = [None, *(s.first for s in placed.statements[::7])]
    for word in sorted({*whole, *imports.imported_names(placed.module), "nowhere"}):
        count = len(whole.get(word, ()))
        for guess in {0, max(count - 1, 0), count, count + 1}:
            for line in lines:
                assert by_statement.reads_exactly(word, guess, line) is (guess == count), word
            assert by_module.reads_exactly(word, guess) is (guess == count), word


def _check(source: str, *, sparse: bool) -> PythonResult:
    return lint_python(source.encode(), Path("train.py"), RULES, SETTINGS, prefilter=PREFILTER,
                       want_edits=True, sparse=sparse)


def _planner(whole: bool, made: list[EditPlanner]) -> Callable[..., EditPlanner]:
    def make(*args: Any, **kwargs: Any) -> EditPlanner:
        if whole:
            kwargs.update(starts=None, text=None)
        made.append(EditPlanner(*args, **kwargs))
        return made[-1]
    return make


@pytest.mark.parametrize("sparse", [True, False], ids=["sparse", "whole"])
@pytest.mark.parametrize(("name", "source"), _SOURCES, ids=[name for name, _ in _SOURCES])
def test_edits_are_those_of_the_whole_module_computation(
    monkeypatch: pytest.MonkeyPatch, name: str, source: str, sparse: bool
) -> None:
    fast: list[EditPlanner] = []
    monkeypatch.setattr(python, "EditPlanner", _planner(False, fast))
    now = _check(source, sparse=sparse).findings
    slow: list[EditPlanner] = []
    monkeypatch.setattr(python, "EditPlanner", _planner(True, slow))
    before = _check(source, sparse=sparse).findings
    assert now == before
    assert all(p.layout.lines is not None for p in fast if p._layout is not None)
    assert all(p.layout.lines is None for p in slow if p._layout is not None)


def test_generated_modules_have_findings_with_import_edits() -> None:
    """The generated modules exercise what they are for: many fixes, added imports, and
    removed ones (and none where a string, even an escaped one, may still use the name)."""
    removed = {name: _removes_torch(_check(source, sparse=True)) for name, source in
               _GENERATED.items()}
    assert removed == {
        "one torch use left": True,
        "torch used in an annotation string": False,
        "torch used in an escaped annotation string": False,
        "torch used in a string continued over two lines": False,
        "torch named only in prose and comments": True,
        "scaler import used once": False,
        "10 steps": False,
        "40 steps": False,
        "120 steps": False,
    }
    forty = _check(_GENERATED["40 steps"], sparse=True).findings
    assert sum(1 for f in forty if f.fix is not None and len(f.fix.edits) > 1) >= 30
    scaler = _check(_GENERATED["scaler import used once"], sparse=True).findings
    assert any(e.content == "from torch.cuda.amp import autocast\n"
               for f in scaler if f.fix is not None for e in f.fix.edits)


def _removes_torch(result: PythonResult) -> bool:
    return any(e.content == "" and e.location.row == 1 for f in result.findings
               if f.fix is not None for e in f.fix.edits)


class _EagerLayout(imports.Layout):
    """Every statement's code generated at once, as before."""

    def __init__(self, module: cst.Module, *args: Any) -> None:
        super().__init__(module, *args)
        assert self.statements is not None


def _whole_unused(before: cst.Module, after: cst.Module, keep: imports.Needs,
                  replaced: Any = None) -> set[str]:
    return _UNUSED_AFTER(before, after, keep)


_UNUSED_AFTER = imports.unused_after


@pytest.mark.parametrize(("name", "source"), _SOURCES, ids=[name for name, _ in _SOURCES])
def test_fix_writes_what_the_whole_module_computation_writes(
    monkeypatch: pytest.MonkeyPatch, name: str, source: str
) -> None:
    """`--fix`: the layout generates only the statements up to the import edits, and only the
    names the replaced nodes read may have lost their last use."""
    result = _check(source, sparse=False)
    if result.module is None or not result.fixes:
        return
    fixes = [fix for _finding, fix, _where in result.fixes]
    now = fixer.apply_fixes(result.module, fixes, SETTINGS)
    monkeypatch.setattr(fixer, "Layout", _EagerLayout)
    monkeypatch.setattr(imports, "unused_after", _whole_unused)
    assert fixer.apply_fixes(result.module, fixes, SETTINGS) == now


def test_the_import_edit_generates_only_the_import_block() -> None:
    module = cst.parse_module(_GENERATED["120 steps"])
    layout = imports.Layout(module)
    needs = imports.Needs(frozenset({"pick_device"}))
    [edit] = imports.add_edits(layout, needs, "cudalint.device")
    assert (edit.start, edit.text) == (6, "from cudalint.device import pick_device\n")
    assert len(layout._placed) == 5 and len(module.body) == 125  # up to `SCALER = ...`

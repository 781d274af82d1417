"""`--fix` rebuilds only the nodes that hold a fix's target (cudalint.engine.fixes.fixer:
LibCST's transformer rebuilt every node of the module), leaves the imports of the functions
no fix entered unread (`local_imports.may_empty`), and stops reading a module for an
import's uses once each import is read (`imports.unread`). The fixed code, the fixes
applied and the findings left are those of the whole-module computation: every node
rebuilt, every function's imports and every use read."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from cudalint.engine.contract import PythonRule
from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.fixes import fixer, imports, local_imports
from cudalint.engine.fixes.imports import Needs
from cudalint.engine.lint.autofix import fix_python
from cudalint.engine.lint.python import lint_python
from cudalint.engine.walk.context import Settings
from cudalint.rules import all_rules

FIXTURES = sorted((Path(__file__).resolve().parents[2] / "fixtures").rglob("*.py"))
RULES = tuple(r for r in all_rules() if issubclass(r, PythonRule))
SETTINGS = Settings(target_torch=(2, 13))
PREFILTER = Prefilter.for_rules(RULES, SETTINGS)

# Nested fixes, a function whose own import a fix empties beside one no fix enters, a
# top-level import whose last use goes, one still read at the bottom, and a string that
# reads a name as an annotation.
SOURCES = {
    "nested and local imports": '''import torch
from torch.cuda.amp import GradScaler


def train(model, batch):
    from torch.cuda.amp import autocast
    with autocast():
        out = model(batch.cuda().half().cuda())
    return out


def untouched(x):
    import math
    return math.sqrt(x)


class Trainer:
    def step(self, x):
        torch.cuda.synchronize()
        return x.to("cuda")

    def scaler(self) -> "GradScaler":
        return GradScaler()
''',
    "an import's last use goes": '''import os

import torch
from torch.cuda.amp import autocast


def run(x):
    with autocast():
        return x.cuda()


print(os.getcwd())
''',
}


def _whole_module_unused_after(before: cst.Module, after: cst.Module, keep: Needs,
                               replaced: object = None) -> set[str]:
    """`imports.unused_after` from every use of both modules."""
    imported = imports.imported_names(after) - keep.helpers - keep.modules
    if replaced is not None:
        imported &= {name for node in replaced for name in imports.uses(node)}  # type: ignore[attr-defined]
    used_before, used_after = imports.uses(before), imports.uses(after)
    return {name for name in imported if used_before.get(name) and not used_after.get(name)}


def _fixed(data: bytes, unsafe: bool) -> tuple[bytes, int, list[tuple[str | None, int]]]:
    outcome = fix_python(data, Path("train.py"), RULES, SETTINGS, unsafe=unsafe,
                         prefilter=PREFILTER)
    left = [(f.code, f.location.row) for f in outcome.result.findings]
    return outcome.data, outcome.applied, left


def _sources() -> list[tuple[str, bytes]]:
    return [*((name, text.encode()) for name, text in SOURCES.items()),
            *((str(path.name), path.read_bytes()) for path in FIXTURES)]


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_fixing_the_nodes_that_hold_a_target_writes_what_rebuilding_all_writes(
        unsafe, monkeypatch):
    sources = _sources()
    pruned = [_fixed(data, unsafe) for _, data in sources]
    with monkeypatch.context() as whole:
        whole.setattr(fixer, "_holding", lambda root, targets: None)  # every node rebuilt
        whole.setattr(local_imports, "may_empty", lambda changed: True)
        whole.setattr(imports, "unused_after", _whole_module_unused_after)
        rebuilt = [_fixed(data, unsafe) for _, data in sources]
    changed = [name for (name, data), (fixed, _, _) in zip(sources, pruned, strict=True)
               if fixed != data]
    assert len(changed) > len(sources) // 3  # the comparison covers real fixes
    for (name, _), mine, reference in zip(sources, pruned, rebuilt, strict=True):
        assert mine == reference, name


def test_a_function_no_fix_entered_is_the_same_node_and_keeps_its_import():
    module = lint_python(SOURCES["nested and local imports"].encode(), Path("train.py"), RULES,
                         SETTINGS, prefilter=PREFILTER, sparse=False)
    assert module.module is not None
    fixes = [fix for _, fix, _ in module.fixes]
    holding = fixer._holding(module.module, (fix.target for fix in fixes))
    replace = fixer._Replace({id(fix.target): fix.replacement for fix in fixes}, holding)
    after = module.module.visit(replace)
    before_functions = {f.name.value: f for f in local_imports._functions(module.module)}
    after_functions = {f.name.value: f for f in local_imports._functions(after)}
    assert after_functions["untouched"] is before_functions["untouched"]
    assert after_functions["train"] is not before_functions["train"]
    # the functions the fixes changed, and only those, are read for emptied imports
    assert sorted(f.name.value for f in replace.functions) == ["scaler", "step", "train"]
    assert local_imports.may_empty(replace.functions)  # train's autocast
    assert not local_imports.may_empty([after_functions["step"]])
    fixed = fixer.apply_fixes(module.module, fixes, SETTINGS).code
    assert "def train(model, batch):\n    with torch.autocast(" in fixed  # its import went
    assert "def untouched(x):\n    import math\n" in fixed
    assert "from torch.cuda.amp import GradScaler\n" in fixed  # read by an annotation


@pytest.mark.parametrize(("names", "unread"), [
    (["torch", "os"], set()),
    (["torch", "json"], {"json"}),
    (["GradScaler"], set()),  # read in a string annotation
    ([], set()),
])
def test_unread_names(names, unread):
    module = cst.parse_module(SOURCES["nested and local imports"] + "import os\nos.sep\n")
    assert imports.unread(module, names) == unread


def test_an_import_unread_before_the_fixes_is_not_theirs_to_remove():
    """`from torch import cuda` is read neither before nor after `x.cuda()` becomes `x.to()`
    (an attribute's name is no read of the import): the fix did not empty it."""
    before = cst.parse_module("from torch import cuda, nn\n\nx.cuda()\nnn.Linear\n")
    call = before.body[1].body[0].value  # type: ignore[attr-defined]
    after = cst.parse_module("from torch import cuda, nn\n\nx.to()\nnn.Linear\n")
    assert imports.unused_after(before, after, Needs(), [call.func.attr]) == set()
    gone = cst.parse_module("from torch import cuda, nn\n\nx.to()\n")
    assert imports.unused_after(before, gone, Needs(), [before.body[2]]) == {"nn"}

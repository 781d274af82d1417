"""The language server's incremental re-checks give what a full check gives, edit after edit:
the differential test of lsp/incremental.py's cache and lsp/unit_keys.py's key, over the
benchmark's training script and every Python file of the fixtures."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from benchmarks.training_file import training_file
from cudalint.engine.first_pass.sparse import leaves, units_of
from cudalint.finding import Finding
from cudalint.kinds import FileKind
from cudalint.lsp.checker import (
    Projects,
    check_python_rows,
    check_python_text,
    check_text,
    fix_names,
)
from cudalint.lsp.incremental import UnitCache
from cudalint.lsp.unit_keys import Keys, facts_of, layout

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))
Edit = Callable[[str], "str | None"]


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Checker:
    """A buffer checked whole, as a code action needs it, and incrementally, as it is
    published."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "edited.py"
        self.project = Projects().for_path(self.path, (folder,))
        self.cache = UnitCache(fix_names())

    def full(self, text: str) -> list[Finding]:
        return check_text(self.path, FileKind.PYTHON, text, self.project)

    def incremental(self, text: str) -> list[Finding]:
        return check_python_text(self.path, text, self.project, self.cache)

    def with_edits(self, text: str) -> list[Finding]:
        return check_text(self.path, FileKind.PYTHON, text, self.project, edits=True)

    def rows(self, text: str, rows: frozenset[int]) -> list[Finding]:
        return check_python_rows(self.path, text, self.project, self.cache, rows)


def on_rows(findings: list[Finding], rows: frozenset[int]) -> list[Finding]:
    return [f for f in findings if any(f.location.row <= r <= f.end_location.row for r in rows)]


def start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", ())
    return decorators[0].lineno if decorators else node.lineno


# --- realistic edits ----------------------------------------------------------------------
def leaf_units(text: str) -> list[tuple[ast.stmt, ast.ClassDef | None]]:
    tree = ast.parse(text)
    found: list[tuple[ast.stmt, ast.ClassDef | None]] = []
    for node in tree.body:
        if isinstance(node, FUNCTIONS):
            found.append((node, None))
        elif isinstance(node, ast.ClassDef):
            found.extend((m, node) for m in node.body if isinstance(m, FUNCTIONS))
    return found


def insert(text: str, row: int, line: str) -> str:
    """`line` inserted before 1-based `row`."""
    lines = text.splitlines(keepends=True)
    return "".join([*lines[:row - 1], line, *lines[row - 1:]])


def in_function(which: float, *lines: str, methods: bool = True) -> Edit:
    """Insert `lines` (indented as the body) at the start of a function's body (after its
    docstring), in the function (or method) `which` of the way down the file."""
    def edit(text: str) -> str | None:
        units = [u for u in leaf_units(text) if methods or u[1] is None]
        if not units:
            return None
        node = units[min(int(len(units) * which), len(units) - 1)][0]
        body = node.body[0]  # type: ignore[attr-defined]
        if isinstance(body, ast.Expr) and isinstance(body.value, ast.Constant) \
                and len(node.body) > 1:  # type: ignore[attr-defined]
            body = node.body[1]  # type: ignore[attr-defined]
        indent = " " * body.col_offset
        return insert(text, start(body), "".join(f"{indent}{line}\n" for line in lines))
    return edit


def after_imports(line: str) -> Edit:
    def edit(text: str) -> str:
        imports = [n for n in ast.parse(text).body if isinstance(n, (ast.Import, ast.ImportFrom))]
        row = (imports[-1].end_lineno or 0) + 1 if imports else 1
        return insert(text, row, line)
    return edit


def replace_line(old: str, new: str) -> Edit:
    def edit(text: str) -> str | None:
        pattern = re.compile(rf"^{re.escape(old)}$", re.MULTILINE)
        return pattern.sub(new, text, count=1) if pattern.search(text) else None
    return edit


def replace_line_in(old: str, new: str) -> Edit:
    """Replace `old` on the first line holding it, whatever its indentation."""
    def edit(text: str) -> str | None:
        return text.replace(old, new, 1) if old in text else None
    return edit


def delete_line(line: str) -> Edit:
    def edit(text: str) -> str | None:
        lines = text.splitlines(keepends=True)
        kept = [x for x in lines if x.strip() != line]
        return "".join(kept) if len(kept) < len(lines) else None
    return edit


def rename(which: float, name: str) -> Edit:
    def edit(text: str) -> str | None:
        top = [n for n in ast.parse(text).body if isinstance(n, FUNCTIONS)]
        if not top:
            return None
        node = top[min(int(len(top) * which), len(top) - 1)]
        return insert_at(text, node.lineno, f"def {node.name}(", f"def {name}(")
    return edit


def insert_at(text: str, row: int, old: str, new: str) -> str | None:
    lines = text.splitlines(keepends=True)
    if old not in lines[row - 1]:
        return None
    lines[row - 1] = lines[row - 1].replace(old, new, 1)
    return "".join(lines)


def delete_unit(which: float) -> Edit:
    def edit(text: str) -> str | None:
        units = [n for n, owner in leaf_units(text) if owner is None]
        if len(units) < 2:
            return None
        node = units[min(int(len(units) * which), len(units) - 1)]
        lines = text.splitlines(keepends=True)
        return "".join([*lines[:start(node) - 1], *lines[node.end_lineno or node.lineno:]])
    return edit


def in_method(index: int, *lines: str) -> Edit:
    """Append `lines` to the body of method `index` of the first class that has two."""
    def edit(text: str) -> str | None:
        classes = [n for n in ast.parse(text).body if isinstance(n, ast.ClassDef)
                   and sum(isinstance(m, FUNCTIONS) for m in n.body) >= 2]
        if not classes:
            return None
        method = [m for m in classes[0].body if isinstance(m, FUNCTIONS)][index]
        body = method.body[-1]
        indent = " " * body.col_offset
        return insert(text, (body.end_lineno or body.lineno) + 1,
                      "".join(f"{indent}{line}\n" for line in lines))
    return edit


def move_to_end(needle: str) -> Edit:
    """Move the top-level function or class holding `needle` to the end of the file."""
    def edit(text: str) -> str | None:
        lines = text.splitlines(keepends=True)
        for node in ast.parse(text).body:
            first, last = start(node), node.end_lineno or node.lineno
            if isinstance(node, (*FUNCTIONS, ast.ClassDef)) \
                    and needle in "".join(lines[first - 1:last]):
                moved = ["\n\n", *lines[first - 1:last]]
                return "".join([*lines[:first - 1], *lines[last:], *moved])
        return None
    return edit


SERIES: tuple[tuple[str, Edit], ...] = (
    ("comment in a function", in_function(0.5, "# the batch goes to the GPU first")),
    ("`.cuda()` added in a function", in_function(0.5, "extra = torch.zeros(2).cuda()")),
    ("a line above everything", lambda text: "# a new first line\n" + text),
    ("DEVICE used in a function", in_function(0.7, "moved = batch.to(DEVICE)")),
    ("module-level DEVICE added", after_imports('DEVICE = "cuda"\n')),
    ("module-level DEVICE changed", replace_line('DEVICE = "cuda"', 'DEVICE = "cpu"')),
    ("module-level assignment added", after_imports("extra_0 = torch.zeros(8).cuda()\n")),
    ("`.cuda()` removed", delete_line("extra = torch.zeros(2).cuda()")),
    ("a guard on a module-level flag",
     in_function(0.35, "if use_gpu:", "    torch.cuda.synchronize()")),
    ("the flag set", after_imports("use_gpu = torch.cuda.is_available()\n")),
    ("the flag changed", replace_line("use_gpu = torch.cuda.is_available()", "use_gpu = True")),
    ("a name used in one function", in_function(0.4, "kept = scores.mode()")),
    ("that name assigned in another", in_function(0.8, "scores = torch.randn(3)")),
    ("and at module level", after_imports("scores = None\n")),
    ("an alias used before its import", in_function(0.45, "th.cuda.synchronize()")),
    ("the import added", after_imports("import torch as th\n")),
    ("the import changed", replace_line("import torch as th", "import numpy as th")),
    ("function renamed to the helper's name", rename(0.3, "pick_device")),
    ("function renamed again", rename(0.3, "pick_device_renamed")),
    ("an alias used late in the file", in_function(0.9, "tc.synchronize()")),
    ("imported in an earlier function", in_function(0.2, "import torch.cuda as tc")),
    ("a module alias used", in_function(0.55, "late.synchronize()", methods=False)),
    ("imported at the end", lambda text: text + "\nimport torch.cuda as late\n"),
    ("the function moved below that import", move_to_end("late.synchronize()")),
    ("an attribute read in one method",
     in_method(1, "if self.use_cuda:", "    torch.cuda.synchronize()")),
    ("set in another", in_method(0, "self.use_cuda = torch.cuda.is_available()")),
    ("and changed", replace_line_in("self.use_cuda = torch.cuda.is_available()",
                                    "self.use_cuda = True")),
    ("a function deleted", delete_unit(0.5)),
    ("MPS considered in a function", in_function(0.6, 'fallback = "mps"')),
    ("a line deleted at the top", lambda text: text.split("\n", 1)[1]),
)


def versions(text: str) -> Iterator[tuple[str, str]]:
    yield "opened", text
    for name, edit in SERIES:
        edited = edit(text)
        if edited is None or edited == text:
            continue
        text = edited
        yield name, text


def differential(folder: Path, text: str) -> Checker:
    checker = Checker(folder)
    for name, version in versions(text):
        assert checker.incremental(version) == checker.full(version), name
    return checker


def test_the_training_script_edit_after_edit(tmp_path: Path) -> None:
    checker = differential(tmp_path, training_file(300))
    assert checker.cache.reused > 100  # the cache did serve


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_a_fixture_edit_after_edit(tmp_path: Path, path: Path) -> None:
    differential(tmp_path, path.read_text(encoding="utf-8"))


def test_code_actions_of_some_rows_are_those_of_a_full_check(tmp_path: Path) -> None:
    """A code action's check reads the units under the rows asked about (and what every check
    reads): there, its findings and their edits are those of a full check with edits."""
    checker = Checker(tmp_path)
    for name, version in versions(training_file(300)):
        full = checker.with_edits(version)
        assert any(f.fix and f.fix.edits for f in full), name
        # A finding near the top, one in the middle, one at the end, and a row of prose.
        picked = [full[0], full[len(full) // 2], full[-1]]
        rows = frozenset({*(f.location.row for f in picked), version.count("\n") // 3})
        scoped = checker.rows(version, rows)
        assert on_rows(scoped, rows) == on_rows(full, rows), name
        assert len(scoped) < len(full), name  # it did not check everything


MOVED = ("import torch\n\n\ndef f():\n    return torch.ones(1).cuda()\n\n\nprint(1)\n\n\n"
         "def g():\n    pass\n")
# f moves below the module-level statement, as it is: its rank among them changes.
MOVED_DOWN = ("import torch\n\n\ndef g():\n    pass\n\n\nprint(1)\n\n\n"
              "def f():\n    return torch.ones(1).cuda()\n")


@pytest.mark.parametrize(("series", "least_taken"), [
    ([text for _, text in versions(training_file(300))], 100),
    ([MOVED, MOVED_DOWN], 0),
], ids=["training script", "a unit moved"])
def test_a_key_taken_from_the_last_version_is_the_key_made_afresh(
        series: list[str], least_taken: int) -> None:
    """Edit after edit, each unit's key (unit_keys.Keys) is the one a check without the last
    version's keys makes; keys are taken from the last version where they can be."""
    known: dict[object, bytes] = {}
    taken = 0
    for index, version in enumerate(series):
        data = version.encode()
        tree = ast.parse(data)
        lines = data.splitlines()
        found = layout(lines, tree)
        units = {unit.first: unit for unit in leaves(units_of(data, tree))
                 if unit.first in found.units}
        facts = {first: facts_of(found.units[first][0], unit.text, lines)
                 for first, unit in units.items()}
        keys = Keys(found, facts, data, fix_names(), known)
        fresh = Keys(found, facts, data, fix_names())
        for first, unit in units.items():
            assert keys.key(first, unit.text) == fresh.key(first, unit.text), (index, first)
        taken += sum(memo in known for memo in keys.made)
        known = keys.made
    assert taken >= least_taken


DIFFUSION = '''\
import numpy as np
import torch


def _extract(arr, timesteps):
    return torch.from_numpy(arr).to(device=timesteps.device)[timesteps]


class Diffusion:
    def __init__(self, betas):
        self.betas = np.array(betas, dtype=np.float32)

    def q_sample(self, x, t):
        return _extract(self.betas, t) * x
'''


def test_a_caller_edited_elsewhere_changes_the_finding_of_the_function_it_calls(
        tmp_path: Path) -> None:
    """CUD601 reads the callers of a function moving `torch.from_numpy(<parameter>)`: an edit
    of another unit (the array kept on `self` made float64) is seen there."""
    checker = Checker(tmp_path)
    float64 = DIFFUSION.replace("np.float32", "np.float64")
    for version, rows in ((DIFFUSION, []), (float64, [6]), (DIFFUSION, [])):
        found = checker.incremental(version)
        assert found == checker.full(version)
        assert [f.location.row for f in found if f.code == "CUD601"] == rows


BUFFER = '''\
import numpy as np
import torch


class Buffer:
    def __init__(self, n):
        self.rew = np.zeros(n, dtype=np.float32)

    def get(self, device):
        return torch.from_numpy(self.rew).to(device)
'''


def test_an_array_kept_on_self_edited_in_another_method_changes_the_finding_where_it_moves(
        tmp_path: Path) -> None:
    """CUD601 reads what a class's methods keep on `self` for `torch.from_numpy(self.rew)`
    moved in another: `__init__` made float64, then float32 again, is seen in `get`."""
    checker = Checker(tmp_path)
    float64 = BUFFER.replace(", dtype=np.float32", "")
    for version, rows in ((BUFFER, []), (float64, [10]), (BUFFER, [])):
        found = checker.incremental(version)
        assert found == checker.full(version)
        assert [f.location.row for f in found if f.code == "CUD601"] == rows


AMP = '''\
import torch


def setup():
    from torch.cuda.amp import autocast
    return 1


def step(model, x):
    scaler = torch.cuda.amp.GradScaler()
    return model(x), scaler
'''


def test_an_amp_import_used_in_another_unit_follows_that_unit(tmp_path: Path) -> None:
    """CUD106 reports `from torch.cuda.amp import X` where no unit uses X: a use added to
    (then taken from) another unit changes the import's finding, as a full check finds it
    (the unit holding the import is read at every check)."""
    checker = Checker(tmp_path)
    used = AMP.replace("    return model(x), scaler", "    with autocast():\n"
                                                      "        return model(x), scaler")
    messages = []
    for version in (AMP, used, AMP):
        found = checker.incremental(version)
        assert found == checker.full(version)
        messages.append(["used nowhere" in f.message for f in found if f.location.row == 5])
    assert messages == [[True], [], [True]]


def test_a_unit_calling_the_amp_api_is_reused_after_an_edit_elsewhere(tmp_path: Path) -> None:
    """A unit that only calls `torch.cuda.amp.GradScaler()` (no import from `cuda.amp`) keeps
    its findings when another unit is edited: it is not read again."""
    checker = Checker(tmp_path)
    assert [f.code for f in checker.incremental(AMP)] == ["CUD106", "CUD106"]
    before = checker.cache.reused
    edited = AMP.replace("    return 1", "    # a comment\n    return 2")
    found = checker.incremental(edited)
    assert found == checker.full(edited)
    assert checker.cache.reused - before == 1  # `step`, whose text did not change

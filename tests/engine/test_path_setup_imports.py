"""A module that puts folders on sys.path itself before importing the project's modules
(`sys.path.append(str(ROOT))`, then `from utils.general import ...`: a script run by path)
gets the helper's import after those imports, never in the leading block above the set-up
(cudalint.engine.fixes.imports.after_path_setup), in the text `--fix` writes and in the edits
a check offers (the first pass's layout) alike."""

from __future__ import annotations

import libcst as cst
import pytest

from cudalint.engine.fixes import imports
from tests.lint import run_on

SCRIPT = '''"""Train: `python classify/train.py`."""

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # add ROOT to PATH
ROOT = Path(ROOT)

from models.common import make_model
from utils.general import describe


def main():
    sys.path.insert(0, "ignored")  # in a function: not the module's set-up
    return describe(make_model().cuda())


if __name__ == "__main__":
    sys.path.insert(0, "ignored too")
    main()
'''
NEEDS = imports.Needs(frozenset({"pick_device"}))


def _added(source: str, module: str = "_device") -> str:
    layout = imports.Layout(cst.parse_module(source))
    return imports.apply(source, imports.add_edits(layout, NEEDS, module))


def test_the_import_follows_the_imports_after_the_set_up():
    fixed = _added(SCRIPT)
    assert "from utils.general import describe\nfrom _device import pick_device  # noqa: E402\n" \
        in fixed
    assert fixed.replace("from _device import pick_device  # noqa: E402\n", "") == SCRIPT


def test_without_a_set_up_the_leading_block_is_the_place():
    source = "import torch\n\nfrom models.common import make_model\n\nx = 1\n"
    assert _added(source) == ("import torch\n\nfrom models.common import make_model\n"
                              "from _device import pick_device\n\nx = 1\n")


@pytest.mark.parametrize(("source", "after"), [
    # nothing imported after the set-up: right after it
    ("import sys\nsys.path.insert(0, '..')\nx = 1\n", "sys.path.insert(0, '..')\n"),
    # `site.addsitedir` and a slice assignment are set-ups too
    ("import site\nsite.addsitedir('lib')\nimport lib_mod\n", "import lib_mod\n"),
    ("import sys\nsys.path[:0] = ['lib']\nimport lib_mod\ny = 2\n", "import lib_mod\n"),
])
def test_other_set_ups(source, after):
    fixed = _added(source)
    assert after + "from _device import pick_device  # noqa: E402\n" in fixed


def test_the_inline_helper_goes_below_the_set_up_too():
    fixed = _added(SCRIPT, imports.INLINE_MODULE)
    assert fixed.index("def pick_device(") > fixed.index("from utils.general import describe")


def test_the_fix_and_the_checks_edits_place_it_alike(tmp_path):
    """`--fix` (the whole module) and a check's edits (the first pass's layout, where units
    are blanked) put the import on the same line; a second fix changes nothing."""
    _report, fixed = run_on(tmp_path, SCRIPT, fix=True, unsafe=True)
    text = fixed.decode()
    assert text.index("from cudalint.device import pick_device  # noqa: E402") \
        > text.index("from utils.general import describe")
    found = run_on(tmp_path, SCRIPT)[0].findings
    rows = {edit.location.row for finding in found if finding.fix is not None
            for edit in finding.fix.edits if "import pick_device" in edit.content}
    assert rows == {SCRIPT.splitlines().index("from utils.general import describe") + 2}
    assert run_on(tmp_path, text, fix=True, unsafe=True)[1].decode() == text

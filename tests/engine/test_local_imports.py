"""An import whose last use a fix took goes with it (no new F401); one still read, or never
read, stays. At the top of the module (cudalint.engine.fixes.imports: `--fix`'s text and the
edits JSON and the language server report) and in a function
(cudalint.engine.fixes.local_imports)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.cli import main
from tests.lint import run_on

SOURCE = '''import torch


def train(model, batch):
    from torch.cuda.amp import autocast
    with autocast():
        out = model(batch)
    return out


def scaled(x):
    from torch.cuda.amp import GradScaler, autocast
    scaler = GradScaler()
    with autocast():
        return scaler, x


def guarded(x):
    try:
        from torch.cuda.amp import autocast
    except ImportError:
        pass
    with autocast():
        return x


def untouched():
    import os
    return 1


def still_used(x):
    from torch.cuda.amp import autocast
    print(autocast)
    with autocast():
        return x


def partly(scaler):
    from torch.cuda.amp import GradScaler, autocast
    with autocast():
        return isinstance(scaler, GradScaler)
'''


def _fixed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    main(["check", "--no-cache", "--fix", "--unsafe-fixes", str(path)])
    capsys.readouterr()
    return path.read_text()


def test_emptied_function_imports_are_removed_and_the_others_kept(tmp_path, capsys):
    fixed = _fixed(tmp_path, capsys)
    functions = {block.split("(", 1)[0]: block for block in fixed.split("\ndef ")[1:]}
    assert "import" not in functions["train"]
    assert "import" not in functions["scaled"]  # both names emptied
    assert "    try:\n        pass\n    except ImportError:" in functions["guarded"]
    assert "    import os\n" in functions["untouched"]  # unused before: not the fix's doing
    assert "from torch.cuda.amp import autocast" in functions["still_used"]  # still read
    # one name of two emptied: it alone leaves the import (GradScaler is still read)
    assert "    from torch.cuda.amp import GradScaler\n" in functions["partly"]
    _run_every_function(tmp_path)


RUN_EVERY_FUNCTION = """
import torch
import train

model = torch.nn.Linear(2, 2)
batch = torch.ones(1, 2)
train.train(model, batch)
train.scaled(1)
train.guarded(1)
assert train.untouched() == 1
train.still_used(1)
assert train.partly(1) is False  # reads GradScaler
print("ran")
"""


def _run_every_function(folder: Path) -> None:
    """The fixed module imports (its helper written beside it) and every function runs: a
    name whose import the fix dropped while it is still read is a NameError here."""
    done = subprocess.run([sys.executable, "-c", RUN_EVERY_FUNCTION], cwd=folder,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.endswith("ran\n"), done.stderr


def test_the_fix_adds_no_unused_import(tmp_path, capsys):
    """ruff (of the dev extra, run from this interpreter's environment) finds no unused import
    in the fixed file that the original did not have."""
    assert _fixed(tmp_path, capsys) != SOURCE
    (tmp_path / "before.py").write_text(SOURCE)

    def unused(name: str) -> set[str]:
        done = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated",
                               "--select", "F401",
                               "--output-format", "concise", name], cwd=tmp_path,
                              capture_output=True, text=True, check=False)
        assert done.returncode in (0, 1), done.stderr
        return {line.split(": ", 1)[1] for line in done.stdout.splitlines() if "F401" in line}

    before = unused("before.py")
    assert any("`os`" in message for message in before)  # untouched's: ruff did run
    assert unused("train.py") <= before


# -- top-level imports ------------------------------------------------------------------------
def _fix(tmp_path: Path, source: str) -> str:
    return run_on(tmp_path, source, fix=True, unsafe=True)[1].decode()


def _edits(tmp_path: Path, source: str, code: str) -> list[tuple[str, int, int]]:
    """(content, first row, end row) of each edit of the one `code` finding's fix."""
    found = [f for f in run_on(tmp_path, source)[0].findings if f.code == code]
    assert len(found) == 1 and found[0].fix is not None, found
    return [(e.content, e.location.row, e.end_location.row) for e in found[0].fix.edits]


def test_the_import_of_a_name_whose_last_use_is_rewritten_is_removed(tmp_path):
    source = ("import torch\nfrom torch.cuda.amp import autocast\n\n"
              "with autocast():\n    pass\n")
    assert _fix(tmp_path, source) == (
        "import torch\nfrom cudalint.device import pick_device\n\n"
        "with torch.autocast(pick_device().type):\n    pass\n")
    # What JSON, SARIF and the language server offer removes the same line (row 2).
    assert ("", 2, 3) in _edits(tmp_path, source, "CUD106")


def test_a_module_import_whose_last_use_is_rewritten_is_removed(tmp_path):
    source = "import torch\n\ntorch.cuda.synchronize()\n"
    assert _fix(tmp_path, source) == "from cudalint.device import synchronize\n\nsynchronize()\n"
    assert ("", 1, 2) in _edits(tmp_path, source, "CUD105")
    aliased = "import torch as th\n\nth.cuda.empty_cache()\n"
    assert _fix(tmp_path, aliased) == "from cudalint.device import empty_cache\n\nempty_cache()\n"


def test_a_module_import_still_used_elsewhere_is_kept(tmp_path):
    source = "import torch\n\ntorch.cuda.synchronize()\nx = torch.ones(1)\n"
    assert _fix(tmp_path, source) == (
        "import torch\nfrom cudalint.device import synchronize\n\n"
        "synchronize()\nx = torch.ones(1)\n")
    assert all(content for content, _, _ in _edits(tmp_path, source, "CUD105"))  # no removal


def test_a_from_import_still_read_elsewhere_is_kept(tmp_path):
    source = "from torch.cuda.amp import autocast\n\nwith autocast():\n    pass\nprint(autocast)\n"
    fixed = _fix(tmp_path, source)
    assert fixed.startswith("from torch.cuda.amp import autocast\nimport torch\n"), fixed
    assert "print(autocast)" in fixed


def test_only_the_emptied_name_of_a_from_import_is_removed(tmp_path):
    source = ("import torch\nfrom torch.cuda.amp import GradScaler, autocast\n\n"
              "print(GradScaler)\n\nwith autocast():\n    pass\n")
    fixed = run_on(tmp_path, source, codes=["CUD106"], fix=True, unsafe=True)[1].decode()
    assert fixed.splitlines()[:3] == [
        "import torch", "from torch.cuda.amp import GradScaler",
        "from cudalint.device import pick_device"]
    found = run_on(tmp_path, source, codes=["CUD106"])[0].findings
    edits = [(e.content, e.location.row) for f in found if f.fix for e in f.fix.edits]
    assert ("from torch.cuda.amp import GradScaler\n", 2) in edits

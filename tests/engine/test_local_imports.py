"""A function's own import whose last use a fix took goes with it (no new F401); one the
function still reads, or never read, stays."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cudalint.cli import main

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
    compile(fixed, "train.py", "exec")


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_the_fix_adds_no_unused_import(tmp_path, capsys):
    fixed = _fixed(tmp_path, capsys)
    (tmp_path / "before.py").write_text(SOURCE)

    def unused(name: str) -> set[str]:
        done = subprocess.run(["ruff", "check", "--isolated", "--select", "F401",
                               "--output-format", "concise", name], cwd=tmp_path,
                              capture_output=True, text=True, check=False)
        return {line.split(": ", 1)[1] for line in done.stdout.splitlines() if "F401" in line}

    assert fixed
    assert unused("train.py") <= unused("before.py")

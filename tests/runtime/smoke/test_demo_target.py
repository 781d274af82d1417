"""The demo's smoke target fails before `cudalint check --fix` and passes after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalint.cli import main as cudalint_main

from .helpers import check


def test_smoke_proves_the_fix(smoke, demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = f"{demo / 'smoke_target.py'}:train_step"
    code, report, _, _ = smoke(target)
    assert code == 1
    detail = check(report, "run")["detail"]
    assert "Torch not compiled with CUDA enabled" in detail
    assert "innermost" in detail and "model.py:" in detail

    cudalint_main(["check", "--fix", str(demo)])
    capsys.readouterr()

    code, report, _, _ = smoke(target, "--repeat", "1")
    assert code == 0, report["checks"]
    assert check(report, "determinism")["status"] == "pass"
    assert "returned 2 output(s), 2 tensor(s)" in check(report, "run")["detail"]

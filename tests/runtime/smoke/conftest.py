from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cudalint.runtime.smoke.command import main

SmokeResult = tuple[int, "dict[str, Any] | None", str, str]


@pytest.fixture
def smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., SmokeResult]:
    """Run `cudalint smoke --in-process`: (exit code, JSON report or None, stdout, stderr)."""

    def run(*argv: str) -> SmokeResult:
        report_path = tmp_path / "report.json"
        report_path.unlink(missing_ok=True)
        code = main([*argv, "--in-process", "--json", str(report_path)])
        out, err = capsys.readouterr()
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        return code, report, out, err

    return run


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "install: builds a fresh virtual environment and installs into it with pip "
                   "(about a minute); deselect with -m 'not install'")

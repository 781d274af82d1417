"""A `cudalint check --fix` run over a tree holding one hostile file and one ordinary file, for
the tests that each file's failure is its own error line and the rest is still fixed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from cudalint.cli import main

GOOD = "import torch\nmodel = Net().cuda()\n"
FIXED = "model = Net().to(pick_device())"


@dataclass
class Outcome:
    code: int
    findings: list[dict]
    err: str

    def errors(self, name: str) -> list[str]:
        """The error lines (findings without a code) of the file called `name`."""
        return [f["message"] for f in self.findings
                if f["code"] is None and Path(f["filename"]).name == name]

    def codes(self, name: str) -> list[str]:
        return [f["code"] for f in self.findings
                if f["code"] is not None and Path(f["filename"]).name == name]


def good_file(root: Path, name: str = "good.py") -> Path:
    path = root / name
    path.write_text(GOOD)
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Outcome:
    code = main([*args, "--output-format", "json"])
    captured = capsys.readouterr()
    return Outcome(code, json.loads(captured.out), captured.err)


def assert_fixed(path: Path) -> None:
    text = path.read_text()
    assert FIXED in text and "pick_device" in text.split(FIXED)[0], text

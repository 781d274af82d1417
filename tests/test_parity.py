"""Issue 40: a file's findings are a fact about the file in its project, not about how the
run was started. A kernel library's own repository (its package on CUD201's table, its setup.py
building `pkg._C`) is checked every way in; scripts/parity.py's core compares them all."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from cudalint.cli import main
from cudalint.engine.running import project_facts

ROOT = Path(__file__).resolve().parents[1]

@pytest.fixture(scope="module")
def parity() -> ModuleType:
    spec = importlib.util.spec_from_file_location("parity", ROOT / "scripts" / "parity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def repo(parity: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """flash-attention: its own package on CUD201's table, its setup.py building
    flash_attn._C, a class with its own `cuda` method in tools/sensor.py."""
    root: Path = parity.kernel_library(tmp_path_factory.mktemp("repo"))
    return root


def _findings(capsys: pytest.CaptureFixture[str], *args: str) -> set[tuple[str, int, str]]:
    main(["check", "--no-cache", "--output-format", "json", "--exit-zero", *args])
    return {(f["code"], f["location"]["row"], f["fix"]["applicability"] if f["fix"] else "")
            for f in json.loads(capsys.readouterr().out) if f["filename"].endswith("mod.py")}


def test_every_way_in_gives_the_projects_findings(repo, capsys, monkeypatch):
    """Own imports are never CUD201, `from flash_attn import _C` is CUD305 every time, and the
    `.cuda()` fix is unsafe every time (`Sensor.cuda` in another module of the project)."""
    monkeypatch.chdir(repo)
    expected = {("CUD305", 2, ""), ("CUD102", 7, "unsafe")}
    for args in (["."], ["flash_attn/"], ["flash_attn/mod.py"],
                 ["--force-exclude", "flash_attn/mod.py"]):
        assert _findings(capsys, *args) == expected, args
    monkeypatch.chdir(repo / "flash_attn")
    assert _findings(capsys, "mod.py") == expected


def test_the_parity_script_finds_every_way_in_agreeing(parity, repo):
    assert [str(d) for d in parity.parity(repo)] == []


def test_the_parity_script_fails_when_the_root_is_the_checked_path(parity, repo, monkeypatch):
    """The regression the issue is about: project facts read from the folder a run starts at."""
    monkeypatch.setattr(project_facts, "_root", lambda folder, config: config.root)
    found = parity.parity(repo, lsp=False, fix=False)
    disagreeing = {(d.file, d.second) for d in found}
    assert ("flash_attn/mod.py", "check <file> from its folder") in disagreeing
    assert ("flash_attn/mod.py", "check --force-exclude <file> (pre-commit)") in disagreeing
    assert all(d.first == "check ." for d in found)
    text = str(next(d for d in found if d.second == "check <its folder>"))
    assert "CUD201" in text and "CUD305" in text

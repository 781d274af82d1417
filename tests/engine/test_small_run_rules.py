"""A small run of Python files imports only the rules whose terms its files name
(rules/index.py); its output is what a run with every rule of its kinds prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.engine.running import runner

_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _json(capsys: pytest.CaptureFixture[str], *paths: Path) -> str:
    main(["check", "--no-cache", "--exit-zero", "--output-format", "json",
          *map(str, paths)])
    return capsys.readouterr().out


@pytest.mark.parametrize("path", sorted(_FIXTURES.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(_FIXTURES)))
def test_each_fixture_alone_gets_the_findings_of_every_rule(path, capsys, monkeypatch):
    chosen = _json(capsys, path)
    monkeypatch.setattr(runner, "_SMALL_RUN", 0)  # every rule of the kind
    assert chosen == _json(capsys, path)


def test_a_few_files_together_choose_the_rules_of_all_of_them(tmp_path, capsys, monkeypatch):
    (tmp_path / "a.py").write_text("import torch\nx = torch.ones(2, dtype=torch.float64)\n"
                                   "y = x.cuda()\n")
    (tmp_path / "b.py").write_text("import torch.distributed as dist\n"
                                   "dist.init_process_group('nccl')\n")
    (tmp_path / "c.py").write_text("import os\nprint(os.getcwd())\n")
    files = [tmp_path / name for name in ("a.py", "b.py", "c.py")]
    chosen = _json(capsys, *files)
    assert "CUD102" in chosen and "CUD701" in chosen
    monkeypatch.setattr(runner, "_SMALL_RUN", 0)
    assert chosen == _json(capsys, *files)


def test_a_fixing_run_imports_every_rule(tmp_path):
    """A fix writes text (`pick_device(0)`) that a rule the file did not name may read."""
    from cudalint.engine.running.runner import RunOptions, _read_small_run
    from cudalint.engine.settings import Settings
    from cudalint.kinds import FileKind

    (tmp_path / "a.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    files = [(tmp_path / "a.py", FileKind.PYTHON, Settings())]
    read = _read_small_run(files, RunOptions())
    assert read is not None and read[tmp_path / "a.py"][0].startswith(b"import torch")
    assert _read_small_run(files, RunOptions(fix=True)) is None
    assert _read_small_run(files, RunOptions(diff=True)) is None

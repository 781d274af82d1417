"""Where a run's tolerance came from: declared in the project and committed before the run,
declared and not committed, or outside git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cudalint.runtime.smoke.compare import Tolerance
from cudalint.runtime.smoke.settings import resolve_tolerance, tolerance_record

TABLE = '[project]\nname = "p"\n\n[tool.cudalint.smoke]\nrtol = 1e-4\n'


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)


def _record(root: Path) -> dict:
    tolerance, source = resolve_tolerance(None, None, root)
    return tolerance_record(tolerance, source, root)


def test_a_declaration_counts_as_first_only_once_committed(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(TABLE)
    assert _record(tmp_path)["committed"] is None  # no git: not shown committed
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "start")
    assert _record(tmp_path)["committed"] is False  # untracked
    _git(tmp_path, "add", "pyproject.toml")
    _git(tmp_path, "commit", "-q", "-m", "tolerance")
    record = _record(tmp_path)
    assert (record["source"], record["committed"], record["rtol"]) == (
        "[tool.cudalint.smoke]", True, 1e-4)
    assert record["float32"] == {"rtol": 1e-4, "atol": 1e-05}  # atol left to the default
    (tmp_path / "pyproject.toml").write_text(TABLE.replace("1e-4", "1e-2"))
    assert _record(tmp_path)["committed"] is False  # changed after the commit


def test_defaults_are_recorded_as_numbers_too(tmp_path: Path) -> None:
    record = tolerance_record(Tolerance(), "default", tmp_path)
    assert record["float32"] == {"rtol": 1.3e-06, "atol": 1e-05}
    assert "committed" not in record

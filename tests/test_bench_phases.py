"""benchmarks/bench_phases.py stays runnable: the engine's phases it times are still there,
and every Python file the check lints is counted."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_it_times_every_phase_of_a_cold_check(tmp_path: Path) -> None:
    project = tmp_path / "projet à tester"
    shutil.copytree(ROOT / "fixtures" / "demo", project)
    linted = len(list(project.rglob("*.py")))
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_phases.py"),
                           "--target", str(project)], capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = {line[:36].strip(): line[36:].split() for line in done.stdout.splitlines()[2:]}
    for phase in ("term search (all files)", "Python's parse (ast, lazy)", "LibCST's parse",
                  "the rules' walk", "positions, noqa, messages", "all"):
        assert phase in rows, done.stdout
    assert float(rows["LibCST's parse"][0]) > 0  # the demo's CUDA code is read by LibCST
    assert f"({linted} Python files linted" in done.stdout.splitlines()[0]

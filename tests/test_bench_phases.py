"""benchmarks/bench_phases.py stays runnable: the engine's phases it times are still there,
and every Python file the check lints is counted."""

from __future__ import annotations

import re
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


def test_the_floor_counts_what_libcst_reads_and_what_holds_a_finding(tmp_path: Path) -> None:
    """bench_floor.py: the lines LibCST reads of the demo, the part of them in a function,
    method or top-level statement holding a finding, LibCST's parse of them timed with and
    without the holders of no finding (CPU seconds, which the test does not compare), and the
    floor's parts adding up."""
    project = tmp_path / "projet à tester"
    shutil.copytree(ROOT / "fixtures" / "demo", project)
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_floor.py"),
                           "--target", str(project)], capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    linted = len(list(project.rglob("*.py")))
    assert f"({linted} Python files;" in lines[0]
    read, needed = (int(word) for word in lines[2].split() if word.isdigit())
    assert 0 < needed < read  # the demo's helpers hold no finding, its training loop does
    assert lines[3].startswith("LibCST's parse of them, timed apart:"), done.stdout
    assert len(re.findall(r"\b\d+\.\d\d\b", lines[3])) == 4  # now, kept, and the two parts
    parts = {line[:48].strip(): float(line[48:].split()[0]) for line in lines[5:10]}
    assert set(parts) == {"term search", "CPython's parser alone",
                          "LibCST phases, what a perfect pre-screen keeps",
                          "the rest, as measured", "all"}
    assert abs(sum(parts.values()) - 2 * parts["all"]) < 0.03

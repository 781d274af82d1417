"""Hostile runs, process side: a worker process that dies costs only the file it was checking,
one file cannot take more memory than max-memory, and Ctrl-C or a SIGKILL of cudalint in the
middle of a real multi-process `--fix` leaves every file whole and no process behind."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudalint.engine.running import pool
from cudalint.engine.running.runner import KILL_WORKER_ON
from tests.engine.fixing_run import GOOD, assert_fixed, good_file, run

SOURCE = str(Path(__file__).parents[2] / "src")
# Two worker processes need 16 files each (runner.pool_size).
FILES = 40


def _tree(root: Path, bad: str = "f20_bad.py") -> tuple[Path, list[Path]]:
    """The bad file sorts in the middle of a chunk, so that files after it in the chunk the
    worker was given are at stake too."""
    goods = [good_file(root, f"f{number:02}.py") for number in range(FILES)]
    return good_file(root, bad), goods


def test_a_worker_killed_on_a_file_is_that_files_error_line(tmp_path, capsys, monkeypatch):
    bad, goods = _tree(tmp_path)
    monkeypatch.setenv(KILL_WORKER_ON, bad.name)  # the worker SIGKILLs itself, as the OOM killer
    outcome = run(capsys, "check", "--fix", "-j", "2", str(tmp_path))
    assert outcome.code == 2  # a file that could not be checked
    assert outcome.errors(bad.name) == [
        "the checker process died (signal 9, SIGKILL) while checking this file; not checked"]
    assert bad.read_text() == GOOD
    for path in goods:  # before and after it, in its chunk and in later ones
        assert_fixed(path)
        assert outcome.errors(path.name) == []
    assert "internal error" not in outcome.err


def _crash(number: int) -> int:
    if number == 5:
        ctypes.string_at(0)  # a segfault, as in a broken C extension
    return number * 2


def test_a_segfault_in_a_worker_is_one_result(quiet_crashes):
    results, interrupted = pool.run_all(_crash, list(range(30)), jobs=2,
                                        on_death=lambda item, reason: reason)
    assert not interrupted
    assert results[5] == ("the checker process died (signal 11, SIGSEGV) while checking this "
                          "file; not checked")
    assert results[:5] + results[6:] == [number * 2 for number in range(30) if number != 5]


def _allocate(megabytes: int) -> str:
    try:
        block = bytearray(megabytes * 1024 * 1024)
    except MemoryError:
        return "MemoryError"
    return f"{len(block) // (1024 * 1024)} MB"


def test_a_worker_cannot_take_more_than_its_memory_limit():
    results, _ = pool.run_all(_allocate, [10, 2048, 10, 50], jobs=2,
                              memory_limit=300 * 1024 * 1024)
    assert results == ["10 MB", "MemoryError", "10 MB", "50 MB"]


def test_a_file_needing_more_than_max_memory_is_one_error_line(tmp_path, capsys,
                                                               quiet_crashes):
    """Dense code takes more than predicted: the worker's memory cap stops it."""
    (tmp_path / "pyproject.toml").write_text("[tool.cudalint]\nmax-memory = 100_000_000\n")
    dense = tmp_path / "f20_dense.py"  # 100 kB, predicted 70 MB; LibCST takes about 200 MB
    dense.write_text(GOOD + "".join(f"x{n} = f(a.b[1], c + 2 * d, e=3)\n" for n in range(3000)))
    before = dense.read_text()
    goods = [good_file(tmp_path, f"f{number:02}.py") for number in range(FILES)]
    outcome = run(capsys, "check", "--fix", "-j", "2", str(tmp_path))
    assert outcome.errors(dense.name) in (
        ["out of memory while checking this file; not checked"],  # MemoryError in Python
        ["the checker process died (signal 6, SIGABRT, most likely out of memory (max-memory)) "
         "while checking this file; not checked"])  # the parser could not allocate
    assert dense.read_text() == before
    for path in goods:
        assert_fixed(path)


def test_a_file_predicting_more_than_max_memory_is_skipped(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.cudalint]\nmax-memory = 100_000_000\n")
    big = tmp_path / "generated_layers.py"
    lines = [f"layer_{number} = nn.Linear({number}, {number + 1}).cuda()\n"
             for number in range(5000)]
    big.write_text("import torch.nn as nn\n" + "".join(lines))
    size = big.stat().st_size
    good = good_file(tmp_path)
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.errors(big.name) == [
        f"skipped: {size / 1e3:.0f} kB of Python needs about {size * 700 / 1e6:.1f} MB to "
        "check, more than max-memory (100.0 MB)"]
    assert big.read_text().startswith("import torch.nn as nn\nlayer_0 = nn.Linear(0, 1).cuda()")
    assert_fixed(good)


# -- real runs in a process group of their own -------------------------------------------------
MANY = 240
# Enough fixes per file that the run lasts long enough to be interrupted.
BODY = "import torch\n" + "".join(f"w{n} = Net{n}().cuda()\nx{n} = batch{n}.cuda()\n"
                                  for n in range(40))


def _start_fixing(root: Path) -> tuple[subprocess.Popen[str], list[Path], str]:
    """A real `cudalint check --fix -j 2` over MANY files, once its first file is written;
    also the text every fixed file has."""
    reference = root / "reference" / "one.py"
    reference.parent.mkdir()
    reference.write_text(BODY)
    subprocess.run([sys.executable, "-m", "cudalint", "check", "--fix", "--no-cache", "-q",
                    str(reference)], env=_env(), capture_output=True, timeout=120)
    fixed = reference.read_text()
    assert fixed != BODY
    tree = root / "tree"
    tree.mkdir()
    files = [tree / f"m{number:03}.py" for number in range(MANY)]
    for path in files:
        path.write_text(BODY)
    process = subprocess.Popen(
        [sys.executable, "-m", "cudalint", "check", "--fix", "--no-cache", "-j", "2",
         "--output-format", "concise", str(tree)],
        env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    deadline = time.monotonic() + 120
    while not any(path.read_text() != BODY for path in files):
        assert process.poll() is None and time.monotonic() < deadline, "nothing was written"
        time.sleep(0.05)
    return process, files, fixed


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SOURCE}


def _group(group: int) -> list[int]:
    """The live processes of a process group, read from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == group:
            members.append(int(entry))
    return members


def _assert_group_ends(group: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while _group(group) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _group(group) == []


def _whole(files: list[Path], fixed: str) -> set[Path]:
    """The files fixed; each of the others must be exactly as it was."""
    texts = {path: path.read_text() for path in files}
    assert all(text in (BODY, fixed) for text in texts.values())
    return {path for path, text in texts.items() if text == fixed}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_ctrl_c_in_a_real_run(tmp_path):
    process, files, fixed = _start_fixing(tmp_path)
    os.killpg(process.pid, signal.SIGINT)  # the terminal sends it to the whole group
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    lines = err.splitlines()
    written = {Path(line.strip()) for line in lines[1:]}
    assert lines[0] == f"cudalint: interrupted; {len(written)} files written:", err
    assert written == _whole(files, fixed)
    assert 0 < len(written) < MANY  # it stopped in the middle
    _assert_group_ends(process.pid, 5)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_workers_end_when_cudalint_is_killed(tmp_path):
    process, files, fixed = _start_fixing(tmp_path)
    assert len(_group(process.pid)) >= 3  # cudalint and its two workers
    process.kill()
    process.communicate(timeout=30)
    _assert_group_ends(process.pid, 5)
    assert 0 < len(_whole(files, fixed)) < MANY
    assert not list(files[0].parent.glob(".*.tmp"))  # a write in hand was finished

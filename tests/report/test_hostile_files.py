"""`cudalint report` reads files as `check` does (issue 31, item 12): a FIFO named like a source,
a smoke file or a smoke report never blocks it, and a device node named like one is never read.

Each report runs in a child process capped in time and memory, so that a report that blocks or
reads a device without end fails the test instead of hanging or exhausting the machine."""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from .smoke_runs import smoke_json

CUDA_SCRIPT = "import torch\nx = torch.zeros(1).cuda()\n"
LIMIT_S = 60  # a blocked report: far more than a report of three files takes
MEMORY = 2 * 1024**3  # a report reading /dev/zero: far less than it would take


def _report(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    try:
        return subprocess.run([sys.executable, "-m", "cudalint", "report", *argv], cwd=cwd,
                              capture_output=True, text=True, timeout=LIMIT_S,
                              preexec_fn=capped, stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("the report blocked")


def _device(path: Path) -> None:
    """A character device node at `path` that reads as /dev/zero (root only)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("making a device node needs root")


@pytest.mark.parametrize("make", ["fifo", "device"])
def test_a_fifo_or_a_device_named_like_a_source_is_not_read(tmp_path: Path, make: str) -> None:
    (tmp_path / "train.py").write_text(CUDA_SCRIPT)
    for name in ("pipe.py", "smoke_pipe.py"):  # a source, and a smoke file the report lists
        if make == "fifo":
            os.mkfifo(tmp_path / name)
        else:
            _device(tmp_path / name)
    done = _report(tmp_path, "--output-format", "json", ".")
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)
    assert decision["project"]["smoke_targets"] == []
    text = json.dumps(decision)
    assert "train.py" in text and "not a regular file" in text


def test_a_smoke_report_that_is_a_fifo_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(CUDA_SCRIPT)
    os.mkfifo(tmp_path / "run.json")
    done = _report(tmp_path, "--smoke", "run.json", ".")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("cudalint report: error: run.json: not a smoke report: not a regular "
                           "file (a FIFO)\n")


@pytest.mark.parametrize("make", ["fifo", "device"])
def test_a_file_the_smoke_run_used_that_is_now_a_fifo_or_a_device_makes_it_stale(
        tmp_path: Path, make: str) -> None:
    """The report hashes the files a smoke run used: one that is now a FIFO or a device is not
    opened, and the run is stale."""
    (tmp_path / "train.py").write_text(CUDA_SCRIPT)
    run = smoke_json("cpu", root=tmp_path, files={"model.py": "0" * 64})
    if make == "fifo":
        os.mkfifo(tmp_path / "model.py")
    else:
        _device(tmp_path / "model.py")
    (tmp_path / "run.json").write_text(json.dumps(run))
    done = _report(tmp_path, "--output-format", "json", "--smoke", "run.json", ".")
    assert done.returncode == 0, done.stderr
    [given] = json.loads(done.stdout)["smoke"]
    assert given["stale"] == ["model.py is gone"]

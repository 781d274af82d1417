"""The target runs in a child process: whatever it does, the harness reports it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from cudalint.runtime.smoke.command import main

from .helpers import check, target


def _isolated(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("function", "error_type", "cause"), [
    ("hard_exit", "Exit", "exited with status 7 before writing its report"),
    ("segfault", "Signal", "killed by SIGSEGV: a segmentation fault"),
])
def test_a_target_that_ends_the_process_is_a_failed_run(
        capsys, function: str, error_type: str, cause: str) -> None:
    code, out, err = _isolated(capsys, target(f"hostile.py:{function}"), "--json", "-")
    assert code == 1
    report = json.loads(out)
    assert report["verdict"] == "fail"
    assert report["error"]["error_type"] == error_type
    assert cause in check(report, "run")["detail"]
    if function == "segfault":  # faulthandler shows the user's line, in the report and on stderr
        assert "hostile.py\", line 27 in segfault" in report["error"]["output_tail"]
        assert "in segfault" in err


def test_a_hang_is_stopped_by_the_timeout(capsys) -> None:
    code, out, _ = _isolated(capsys, target("hostile.py:hangs"), "--timeout", "2")
    assert code == 1
    assert "FAIL     run          Timeout: the target did not finish within 2 s (--timeout)" in out


def test_exit_and_keyboard_interrupt_are_crashes_with_the_users_line(tmp_path: Path,
                                                                       capsys) -> None:
    for function, expected in (("exits", "SystemExit: 3"), ("interrupted", "KeyboardInterrupt")):
        path = tmp_path / f"{function}.json"
        code, _, _ = _isolated(capsys, target(f"hostile.py:{function}"), "--json", str(path))
        detail = check(json.loads(path.read_text()), "run")["detail"]
        assert code == 1
        assert detail.startswith(expected) and "hostile.py:" in detail


def test_what_the_target_prints_stays_out_of_the_json(capsys) -> None:
    code, out, err = _isolated(capsys, target("hostile.py:chatty"), "--json", "-")
    assert code == 0
    assert json.loads(out)["verdict"] == "pass"
    assert "model has 10 parameters" in err
    assert "a line printed by native code" in err


def test_in_process_prints_go_to_stderr(capsys) -> None:
    code, out, err = _isolated(capsys, target("hostile.py:chatty"), "--in-process", "--json", "-")
    assert code == 0
    assert json.loads(out)["verdict"] == "pass"
    assert "model has 10 parameters" in err


@pytest.mark.parametrize("in_process", [True, False])
def test_the_reference_is_validated_before_the_target_is_imported(
        tmp_path: Path, capsys, in_process: bool) -> None:
    marker = tmp_path / "imported"
    script = tmp_path / "train.py"
    script.write_text("from pathlib import Path\n"
                      f"Path({str(marker)!r}).write_text('yes')\n"
                      "def step(device):\n    return 1\n")
    bogus = tmp_path / "ref.safetensors"
    save_file({"x": torch.zeros(1)}, str(bogus))
    flags = ["--in-process"] if in_process else []
    code, _, err = _isolated(capsys, f"{script}:step", "--reference", str(bogus), *flags)
    assert code == 2
    assert err == (f"cudalint smoke: error: {bogus} is not a cudalint smoke reference (no "
                   "'cudalint' metadata); save one with --save-reference\n")
    assert not marker.exists()


def test_harness_errors_in_the_child_are_one_line(capsys) -> None:
    code, _, err = _isolated(capsys, target("healthy.py:nope"))
    assert code == 2
    assert err.startswith("cudalint smoke: error: ") and "has no function 'nope'" in err
    assert err.count("\n") == 1


# Processes a target leaves behind (issue 31, item 13): smoke waits for the target's process,
# never for them, and kills them, in its group or out of it (a daemon in a session of its own).


def _gone(pid: int) -> bool:
    """No such process, or a zombie (killed, waiting to be reaped by whoever adopted it)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as file:
            return file.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


def _left_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys,
                 function: str, timeout: str) -> tuple[int, str, list[str], list[int]]:
    """The run's exit code and output, the processes the target left that lived out their
    lifetime (the run waited for them), and those still running after it."""
    pids = tmp_path / "pids"
    monkeypatch.setenv("SMOKE_TEST_PIDS", str(pids))
    code, out, _ = _isolated(capsys, target(f"leaves_behind.py:{function}"), "--timeout",
                             timeout)
    lived = Path(f"{pids}.lived")
    outlived = lived.read_text().split() if lived.exists() else []  # the run waited for them
    left = [int(line) for line in pids.read_text().split()]
    deadline = time.monotonic() + 30  # SIGKILL is delivered asynchronously
    while not all(map(_gone, left)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:  # never leave one running, whatever the test found
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return code, out, outlived, [pid for pid in left if not _gone(pid)]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux's /proc")
@pytest.mark.parametrize("function", ["returns", "forks"])
def test_a_target_that_leaves_processes_is_not_waited_for(tmp_path, monkeypatch, capsys,
                                                            function: str) -> None:
    """The run ends when the target's process does: a daemon or a fork it leaves, holding its
    output open, neither keeps smoke waiting until the timeout (60 s: some ten times what the
    run takes) nor outlives it."""
    code, out, outlived, alive = _left_behind(tmp_path, monkeypatch, capsys, function, "60")
    assert code == 0 and "verdict: pass" in out, out  # not the timeout's failure
    assert outlived == []
    assert alive == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux's /proc")
def test_the_timeout_also_ends_a_daemon_out_of_the_targets_group(tmp_path, monkeypatch,
                                                                    capsys) -> None:
    code, out, outlived, alive = _left_behind(tmp_path, monkeypatch, capsys, "hangs", "5")
    assert code == 1
    assert "Timeout: the target did not finish within 5 s (--timeout)" in out
    assert outlived == []
    assert alive == []

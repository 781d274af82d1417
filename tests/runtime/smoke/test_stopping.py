"""`cudalint smoke` stopped from outside, or attacked from inside (issue 44, items 6 and 14):
SIGTERM or SIGINT to smoke is passed on to the target's process group, smoke reports what it
had and exits 128 + n; a target that signals its parent cannot end the parent's report; a
target that prints without end costs smoke no memory (its output's head and tail are kept).

Each smoke runs as a real command in a child process (signals are process-wide), capped in
time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudalint.runtime.smoke import isolation

from .helpers import check, subprocess_env, target

held_only = pytest.mark.skipif(not hasattr(signal, "sigtimedwait"),
                               reason="smoke holds signals only where sigtimedwait exists")
LIMIT_S = 120


def _smoke(*argv: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "cudalint", "smoke", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=subprocess_env(**env), stdin=subprocess.DEVNULL)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@held_only
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_from_outside_stops_the_target_and_smoke_reports(tmp_path: Path,
                                                                  signum: int) -> None:
    pid_file = tmp_path / "pid"
    out = tmp_path / "run.json"
    smoke = _smoke(target("hostile.py:waits_for_a_signal"), "--json", str(out),
                   SMOKE_PID_FILE=str(pid_file))
    try:
        for _ in range(LIMIT_S * 10):
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.1)
        target_pid = int(pid_file.read_text())
        smoke.send_signal(signum)
        stdout, stderr = smoke.communicate(timeout=LIMIT_S)
    finally:
        smoke.kill()
    assert smoke.returncode == 128 + signum, stderr
    assert _gone(target_pid)
    assert f"stopped by {signal.Signals(signum).name}" in stderr
    report = json.loads(out.read_text())
    assert report["verdict"] == "fail"
    run = check(report, "run")
    assert run["status"] == "fail"
    if signum == signal.SIGTERM:  # the worker dies of it: the parent writes what it had
        assert run["detail"] == ("Stopped: cudalint smoke was sent SIGTERM from outside and "
                                 "passed it on to the target's process group: the run was "
                                 "stopped")
    else:  # SIGINT is a KeyboardInterrupt in the target, which its report records
        assert "KeyboardInterrupt" in run["detail"] or "Stopped" in run["detail"]
    assert "verdict: fail" in stdout


@held_only
def test_a_target_that_signals_its_parent_cannot_end_the_report(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    smoke = _smoke(target("hostile.py:signals_its_parent"), "--json", str(out))
    try:
        stdout, stderr = smoke.communicate(timeout=LIMIT_S)
    finally:
        smoke.kill()
    assert smoke.returncode == 0, stderr
    assert "verdict: pass" in stdout
    report = json.loads(out.read_text())
    assert report["verdict"] == "pass"
    ignored = [w for w in report["warnings"] if "sent SIG" in w]
    assert sorted(w.split(" sent ")[1].split(" ")[0] for w in ignored) == ["SIGINT", "SIGTERM"]
    assert all(w.endswith("to cudalint smoke; ignored, the run went on") for w in ignored)


def test_a_flood_of_output_is_kept_as_head_and_tail(tmp_path: Path) -> None:
    """8 MB printed: smoke keeps 128 KiB of it and counts the rest (the old harness kept it
    all, twice over as text)."""
    command = [sys.executable, "-c", "import os\nfor _ in range(8 * 1024): os.write(1, b'"
               + "y" * 1023 + "\\n')\nos.write(1, b'the end\\n')"]
    returncode, output = isolation.run_process(command, 60)
    assert returncode == 0
    assert len(output.encode()) < 2 * isolation.KEPT_BYTES + 200
    left_out = 8 * 1024 * 1024 + len("the end\n") - 2 * isolation.KEPT_BYTES
    assert f"[... {left_out:,} bytes of output left out" in output
    assert output.startswith("y" * 1023 + "\n") and output.endswith("the end\n")


# A child printing 40 MiB in 1 MiB blocks; after each, it waits (10 s at most) for the file its
# output goes to to be cut back below the limit the test sets (2 MiB), and notes the largest
# size that file reached.
_FLOODS_AND_WATCHES = """
import os, time
block = (b"z" * 1023 + b"\\n") * 1024
largest = 0
os.write(1, b"the start\\n")
for _ in range(40):
    os.write(1, block)
    largest = max(largest, os.fstat(1).st_size)
    for _ in range(2000):
        if os.fstat(1).st_size <= 2 * 1024 * 1024:
            break
        time.sleep(0.005)
    else:
        os.write(1, b"never cut\\n")
        break
os.write(1, b"largest %d\\n" % largest)
"""


def test_a_flood_costs_bounded_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A target printing in a loop until it is stopped cannot fill the disk: the file its
    output goes to is cut back to its head past SINK_LIMIT while it runs, what was cut out is
    counted, and the head and the last output are kept."""
    monkeypatch.setattr(isolation, "SINK_LIMIT", 2 * 1024 * 1024)
    returncode, output = isolation.run_process([sys.executable, "-c", _FLOODS_AND_WATCHES],
                                               LIMIT_S)
    assert returncode == 0
    assert "never cut" not in output
    assert output.startswith("the start\nzzz")
    largest = int(output.rsplit("largest ", 1)[1])
    assert largest <= 3 * 1024 * 1024  # the limit and the block that crossed it
    total = len("the start\n") + 40 * 1024 * 1024 + len(f"largest {largest}\n")
    head, _, rest = output.partition("\n[... ")
    count, _, tail = rest.partition(" bytes of output left out: the first and last 64 KiB are "
                                    "kept ...]\n")
    assert len(head) == isolation.KEPT_BYTES and tail.endswith(f"largest {largest}\n")
    assert len(head) + int(count.replace(",", "")) + len(tail) == total  # all of it counted


def test_a_smoke_run_that_floods_stays_bounded(tmp_path: Path) -> None:
    """A target printing 8 MB: smoke's own stderr carries the head and tail only."""
    smoke = _smoke(target("hostile.py:floods"), SMOKE_FLOOD_MB="8")
    try:
        _, stderr = smoke.communicate(timeout=LIMIT_S)
    finally:
        smoke.kill()
    assert smoke.returncode == 0, stderr[-2000:]
    assert len(stderr) < 2 * isolation.KEPT_BYTES + 10_000
    assert "bytes of output left out" in stderr


def test_output_within_the_limit_is_kept_whole() -> None:
    command = [sys.executable, "-c", "print('a' * 1000); print('b')"]
    assert isolation.run_process(command, 60) == (0, "a" * 1000 + "\nb\n")


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="reads Linux's /proc")
def test_the_run_mark_finds_the_runs_processes() -> None:
    """The sender test: the child, its session, a process with the mark; not another."""
    from cudalint.runtime.smoke.signals import of_the_run

    assert of_the_run(1234, 1234, None)
    assert not of_the_run(os.getpid(), 1, None)
    mark = b"CUDALINT_SMOKE_RUN=abc"
    with subprocess.Popen([sys.executable, "-c", "import time; print(flush=True); "
                           "time.sleep(30)"], stdout=subprocess.PIPE,
                          env={**os.environ, "CUDALINT_SMOKE_RUN": "abc"}) as marked:
        try:
            assert marked.stdout is not None
            marked.stdout.readline()  # it runs Python: its environment is the one given
            assert of_the_run(marked.pid, 1, mark)
            assert not of_the_run(marked.pid, 1, b"CUDALINT_SMOKE_RUN=other")
        finally:
            marked.kill()


def test_without_sigtimedwait_a_handler_stops_and_reports(tmp_path: Path) -> None:
    """Where signals cannot be held (macOS; here by switching it off), a handler takes them:
    the run is stopped and reported, exit 128 + n."""
    pid_file = tmp_path / "pid"
    out = tmp_path / "run.json"
    code = ("import sys\nfrom cudalint.runtime.smoke import signals\nsignals.SUPPORTED = False\n"
            "from cudalint.runtime.smoke.command import main\nraise SystemExit(main(sys.argv[1:]))")
    smoke = subprocess.Popen([sys.executable, "-c", code, target("hostile.py:waits_for_a_signal"),
                              "--json", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=subprocess_env(SMOKE_PID_FILE=str(pid_file)),
                             stdin=subprocess.DEVNULL)
    try:
        for _ in range(LIMIT_S * 10):
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.1)
        smoke.send_signal(signal.SIGTERM)
        _, stderr = smoke.communicate(timeout=LIMIT_S)
    finally:
        smoke.kill()
    assert smoke.returncode == 143, stderr
    assert _gone(int(pid_file.read_text()))
    assert check(json.loads(out.read_text()), "run")["detail"].startswith(
        "Stopped: cudalint smoke was sent SIGTERM from outside")

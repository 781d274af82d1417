"""Run the harness in a child process, so that nothing the target does takes the harness down:
a hang (killed after `--timeout`, with every process it started, daemons and forks
included), `sys.exit`, `os._exit(7)`, a segfault or a
`KeyboardInterrupt` is a failed run with its cause in the report. What the target prints goes
to stderr, never into the report (so `--json -` stays valid JSON)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cudalint

DEFAULT_TIMEOUT = 300.0
WORKER_FLAG = "--worker-json"
# The environment variable that marks every process of one isolated run (run_process).
RUN_MARK = "CUDALINT_SMOKE_RUN"
_TAIL_CHARS = 2000
_CAUSES = {
    signal.SIGSEGV: "a segmentation fault, in native code (a C/C++ extension, a driver) or "
                    "in torch itself",
    signal.SIGABRT: "an abort, in native code",
    signal.SIGKILL: "killed from outside, often by the system for running out of memory",
    signal.SIGBUS: "a bus error, in native code",
    signal.SIGFPE: "a floating-point exception, in native code",
}


@dataclass(frozen=True)
class ChildResult:
    returncode: int | None  # None: killed after the timeout
    output: str  # what the child printed, stdout and stderr together
    data: dict[str, Any] | None  # the report it wrote, if it got that far

    def tail(self) -> str:
        return self.output[-_TAIL_CHARS:]


def run_child(argv: list[str], timeout: float) -> ChildResult:
    """Run `cudalint smoke ARGV` in a child; the child writes its report to a file we read
    back. The timeout covers the child and everything it starts (run_process)."""
    with tempfile.TemporaryDirectory(prefix="cudalint-smoke-") as folder:
        path = Path(folder) / "report.json"
        command = [sys.executable, "-m", "cudalint.runtime.smoke", *argv, WORKER_FLAG, str(path)]
        returncode, output = run_process(command, timeout, own_group=True)
        return ChildResult(returncode, output, _read(path))


def run_process(command: list[str], timeout: float, *,
                own_group: bool = False) -> tuple[int | None, str]:
    """Run `command` (with this cudalint importable) and wait for that process itself, at most
    `timeout` s: its exit status (None: killed after the timeout) and what it printed, stdout
    and stderr together.

    What it prints goes to a file, not a pipe: a process it leaves behind (a daemon, a fork)
    holding the pipe open would keep a read waiting long after it ended. `own_group`: it runs
    in a process group and session of its own, marked in its environment (RUN_MARK), and when
    it ends or is killed, so is whatever it left behind: its group (forks, DataLoader workers)
    and every process carrying its mark (a daemon that left the group with setsid)."""
    env = child_env()
    mark = None
    if own_group:
        mark = env[RUN_MARK] = uuid.uuid4().hex
    with tempfile.TemporaryFile() as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=env,
                                   start_new_session=own_group)
        try:
            ended = _ended(process, timeout)
        except BaseException:  # KeyboardInterrupt: the user stopped us; stop the child too
            _end(process, mark)
            raise
        _end(process, mark)
        sink.seek(0)
        output = sink.read().decode("utf-8", errors="replace")
    return (process.returncode if ended else None), output


def _ended(process: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether `process` ended within `timeout` s. Where the platform can, it is left unreaped
    (a zombie), so that no other process can take its process group's id before _end kills
    the group."""
    if not hasattr(os, "waitid"):  # pragma: no cover (macOS)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    deadline = time.monotonic() + timeout
    delay = 0.001
    while os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)
    return True


def _end(process: subprocess.Popen[bytes], mark: str | None) -> None:
    """Kill `process` and, with its `mark`, its group and every process carrying the mark;
    then reap it."""
    if mark is None:
        if process.poll() is None:
            process.kill()
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            process.kill()  # a leader that left its own group
        _kill_marked(f"{RUN_MARK}={mark}".encode())
    process.wait()


def _kill_marked(entry: bytes, passes: int = 10) -> None:
    """SIGKILL every process (of ours) whose environment holds `entry` (Linux's /proc), until
    a pass finds none: one started meanwhile by a process being killed is found next pass."""
    for _ in range(passes):
        try:
            pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        except OSError:
            return
        found = False
        for pid in pids:
            if pid == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as file:
                    environ = file.read()
            except OSError:  # gone, or not ours
                continue
            if entry in environ.split(b"\0"):
                found = True
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        if not found:
            return


def child_env() -> dict[str, str]:
    """This environment, with this cudalint importable in the child."""
    env = dict(os.environ)
    root = str(Path(cudalint.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (root, env.get("PYTHONPATH"))))
    env.setdefault("PYTHONFAULTHANDLER", "1")  # a segfault prints where it happened
    return env


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def death(result: ChildResult, timeout: float) -> tuple[str, str]:
    """(error type, message) for a child that ended without writing its report."""
    code = result.returncode
    if code is None:
        return "Timeout", (f"the target did not finish within {timeout:g} s (--timeout) and was "
                           "killed: a hang, a deadlock, or a run longer than the timeout")
    if code < 0:
        try:
            sig = signal.Signals(-code)
        except ValueError:
            return "Signal", f"the process was killed by signal {-code}"
        cause = _CAUSES.get(sig)
        return "Signal", f"the process was killed by {sig.name}" + (f": {cause}" if cause else "")
    return "Exit", (f"the process exited with status {code} before writing its report: "
                    "os._exit() or a fatal error in the target")

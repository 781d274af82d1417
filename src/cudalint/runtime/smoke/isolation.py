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
from typing import TYPE_CHECKING, Any, BinaryIO

import cudalint
from cudalint.runtime.smoke.signals import carries

if TYPE_CHECKING:
    from collections.abc import Callable

    from cudalint.runtime.smoke.signals import Held

DEFAULT_TIMEOUT = 300.0
WORKER_FLAG = "--worker-json"
# The environment variable that marks every process of one isolated run (run_process).
RUN_MARK = "CUDALINT_SMOKE_RUN"
_TAIL_CHARS = 2000
# What is kept of a child's output: its first and last bytes, the rest counted.
KEPT_BYTES = 64 * 1024
# What the file a child prints into may hold: past it, what lies between the kept head and the
# latest output is dropped (and counted), so that a target printing in a loop until the timeout
# costs this much disk, not what it printed (checked at each poll of the child: it may pass it
# by what the child prints in one poll, 50 ms at most).
SINK_LIMIT = 64 * 1024 * 1024
# How long a target stopped from outside (the signal passed on) has to end before it is killed.
STOP_GRACE = 3.0
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
    returncode: int | None  # None: killed after the timeout (or stopped)
    output: str  # what the child printed, stdout and stderr together (head and tail)
    data: dict[str, Any] | None  # the report it wrote, if it got that far
    stopped_by: int | None = None  # the signal from outside that stopped the run
    ignored: tuple[str, ...] = ()  # signals the run's own processes sent to smoke

    def tail(self) -> str:
        return self.output[-_TAIL_CHARS:]


def run_child(argv: list[str], timeout: float, held: Held | None = None) -> ChildResult:
    """Run `cudalint smoke ARGV` in a child; the child writes its report to a file we read
    back. The timeout covers the child and everything it starts (run_process). `held`: the
    stopping signals this process holds (signals.held), taken while it waits."""
    with tempfile.TemporaryDirectory(prefix="cudalint-smoke-") as folder:
        path = Path(folder) / "report.json"
        command = [sys.executable, "-m", "cudalint.runtime.smoke", *argv, WORKER_FLAG, str(path)]
        ignored = len(held.ignored) if held else 0
        returncode, output = run_process(command, timeout, own_group=True, held=held)
        return ChildResult(returncode, output, _read(path), held.stop if held else None,
                           tuple(held.ignored[ignored:]) if held else ())


def run_process(command: list[str], timeout: float, *, own_group: bool = False,
                held: Held | None = None) -> tuple[int | None, str]:
    """Run `command` (with this cudalint importable) and wait for that process itself, at most
    `timeout` s: its exit status (None: killed after the timeout) and what it printed, stdout
    and stderr together.

    What it prints goes to a file, not a pipe: a process it leaves behind (a daemon, a fork)
    holding the pipe open would keep a read waiting long after it ended. `own_group`: it runs
    in a process group and session of its own, marked in its environment (RUN_MARK), and when
    it ends or is killed, so is whatever it left behind: its group (forks, DataLoader workers)
    and every process carrying its mark (a daemon that left the group with setsid).

    `held` (with `own_group`): a signal from outside that comes meanwhile is passed on to its
    group, which has STOP_GRACE s to end (`held.stop` says which; the status is None)."""
    env = child_env()
    mark = None
    if own_group:
        mark = env[RUN_MARK] = uuid.uuid4().hex
    with tempfile.TemporaryFile() as file:
        sink = _Sink(file)
        process = subprocess.Popen(command, stdout=file, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=env,
                                   start_new_session=own_group)
        entry = f"{RUN_MARK}={mark}".encode() if mark else None
        try:
            ended = _ended(process, timeout, held if own_group else None, entry, sink.trim)
        except BaseException:  # KeyboardInterrupt: the user stopped us; stop the child too
            _end(process, mark)
            raise
        _end(process, mark)
        output = kept_output(file, sink.dropped)
    stopped = held is not None and held.stop is not None
    return (process.returncode if ended and not stopped else None), output


class _Sink:
    """The file a child prints into, opened for appending (the child's writes, which share its
    open file, go to its end whatever its size): `trim` cuts it back to its head when it holds
    more than SINK_LIMIT, and counts what it dropped."""

    def __init__(self, file: BinaryIO) -> None:
        import fcntl

        self.fd = file.fileno()
        fcntl.fcntl(self.fd, fcntl.F_SETFL, fcntl.fcntl(self.fd, fcntl.F_GETFL) | os.O_APPEND)
        self.dropped = 0

    def trim(self) -> None:
        size = os.fstat(self.fd).st_size
        if size > SINK_LIMIT:
            os.ftruncate(self.fd, KEPT_BYTES)
            self.dropped += size - KEPT_BYTES


def kept_output(sink: BinaryIO, dropped: int = 0) -> str:
    """What a child printed into `sink`, of which `dropped` bytes after the first KEPT_BYTES
    were cut out while it ran (`_Sink.trim`): all of it up to 2 * KEPT_BYTES, else its first
    and last KEPT_BYTES with the bytes between counted."""
    size = sink.seek(0, os.SEEK_END)
    sink.seek(0)
    if size + dropped <= 2 * KEPT_BYTES:
        return sink.read().decode("utf-8", errors="replace")
    head = sink.read(KEPT_BYTES).decode("utf-8", errors="replace")
    start = max(KEPT_BYTES, size - KEPT_BYTES)  # never the head again
    sink.seek(start)
    tail = sink.read(size - start).decode("utf-8", errors="replace")
    left_out = dropped + start - KEPT_BYTES
    return (f"{head}\n[... {left_out:,} bytes of output left out: the first and "
            f"last {KEPT_BYTES // 1024} KiB are kept ...]\n{tail}")


def _ended(process: subprocess.Popen[bytes], timeout: float, held: Held | None = None,
           mark: bytes | None = None, tick: Callable[[], None] | None = None) -> bool:
    """Whether `process` ended within `timeout` s, polled at least every 50 ms (`tick` is
    called at each poll). Where the platform can, it is left unreaped (a zombie), so that no
    other process can take its process group's id before _end kills the group. With `held`,
    a stopping signal from outside ends the wait: it is passed on to the process's group,
    which has STOP_GRACE s to end."""
    deadline = time.monotonic() + timeout
    delay = 0.001
    while _running(process):
        if tick is not None:
            tick()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        if held is None:
            time.sleep(min(delay, remaining))
        elif (signum := held.wait(min(delay, remaining), process.pid, mark)) is not None:
            _pass_on(process, signum, held, mark)
            return False
        delay = min(delay * 2, 0.05)
    return True


def _pass_on(process: subprocess.Popen[bytes], signum: int, held: Held,
             mark: bytes | None) -> None:
    """Send `signum` to the process's group and wait up to STOP_GRACE s for the process to
    end (a second signal from outside cuts the wait short)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)
    deadline = time.monotonic() + STOP_GRACE
    while _running(process):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        if held.wait(min(0.02, remaining), process.pid, mark) is not None:
            return


def _running(process: subprocess.Popen[bytes]) -> bool:
    """Whether `process` still runs, left unreaped where the platform can (os.waitid)."""
    if not hasattr(os, "waitid"):  # pragma: no cover (macOS: reaped)
        return process.poll() is None
    return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None


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
            if carries(pid, entry):
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

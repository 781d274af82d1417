"""Run the harness in a child process, so that nothing the target does takes the harness down:
a hang (killed after `--timeout`), `sys.exit`, `os._exit(7)`, a segfault or a
`KeyboardInterrupt` is a failed run with its cause in the report. What the target prints goes
to stderr, never into the report (so `--json -` stays valid JSON)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cudalint

DEFAULT_TIMEOUT = 300.0
WORKER_FLAG = "--worker-json"
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
    """Run `cudalint smoke ARGV` in a child (its own process group, so a timeout also ends the
    DataLoader workers it started); the child writes its report to a file we read back."""
    with tempfile.TemporaryDirectory(prefix="cudalint-smoke-") as folder:
        path = Path(folder) / "report.json"
        command = [sys.executable, "-m", "cudalint.runtime.smoke", *argv, WORKER_FLAG, str(path)]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=child_env(),
                                   start_new_session=True)
        returncode: int | None
        try:
            output, _ = process.communicate(timeout=timeout)
            returncode = process.returncode
        except subprocess.TimeoutExpired:
            _kill(process)
            output, _ = process.communicate()
            returncode = None
        except BaseException:  # KeyboardInterrupt: the user stopped us; stop the child too
            _kill(process)
            process.wait()
            raise
        return ChildResult(returncode, output.decode("utf-8", errors="replace"), _read(path))


def child_env() -> dict[str, str]:
    """This environment, with this cudalint importable in the child."""
    env = dict(os.environ)
    root = str(Path(cudalint.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (root, env.get("PYTHONPATH"))))
    env.setdefault("PYTHONFAULTHANDLER", "1")  # a segfault prints where it happened
    return env


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


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

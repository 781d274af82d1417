"""Targets that leave processes behind: a daemon (a session of its own, as `setsid` or a
double fork makes it) and a plain fork. Each writes its pid to $SMOKE_TEST_PIDS, and lives
LIFETIME seconds: far longer than any test waits. The daemon is started when the module is
imported, before torch is, so that it runs even under a short --timeout."""

from __future__ import annotations

import os
import subprocess
import sys
import time

LIFETIME = 400


def _note(pid: int) -> None:
    with open(os.environ["SMOKE_TEST_PIDS"], "a", encoding="utf-8") as file:
        file.write(f"{pid}\n")


def _daemon() -> None:
    process = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({LIFETIME})"],
                               start_new_session=True, stdin=subprocess.DEVNULL)
    _note(process.pid)


_daemon()

import torch  # noqa: E402  (after the daemon: see the docstring)


def returns(device: torch.device) -> torch.Tensor:
    return torch.ones(2, device=device)


def forks(device: torch.device) -> torch.Tensor:
    pid = os.fork()
    if pid == 0:
        time.sleep(LIFETIME)
        os._exit(0)
    _note(pid)
    return torch.ones(2, device=device)


def hangs(device: torch.device) -> torch.Tensor:
    time.sleep(LIFETIME)
    return torch.ones(2, device=device)

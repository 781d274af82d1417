"""Targets that leave processes behind: a daemon (a session of its own, as `setsid` or a
double fork makes it) and a plain fork. Each writes its pid to $SMOKE_TEST_PIDS, and lives
LIFETIME seconds: far longer than any test waits; one that lives them out writes its pid to
$SMOKE_TEST_PIDS.lived (a run that waited for it). The daemon is started when the module is
imported, before torch is, so that it runs even under a short --timeout."""

from __future__ import annotations

import os
import subprocess
import sys
import time

LIFETIME = 400


def _note(pid: int, suffix: str = "") -> None:
    with open(os.environ["SMOKE_TEST_PIDS"] + suffix, "a", encoding="utf-8") as file:
        file.write(f"{pid}\n")


def _live() -> None:
    time.sleep(LIFETIME)
    _note(os.getpid(), ".lived")


def _daemon() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", f"import os, time; time.sleep({LIFETIME}); "
         "open(os.environ['SMOKE_TEST_PIDS'] + '.lived', 'a').write(f'{os.getpid()}\\n')"],
        start_new_session=True, stdin=subprocess.DEVNULL)
    _note(process.pid)


_daemon()

import torch  # noqa: E402  (after the daemon: see the docstring)


def returns(device: torch.device) -> torch.Tensor:
    return torch.ones(2, device=device)


def forks(device: torch.device) -> torch.Tensor:
    pid = os.fork()
    if pid == 0:
        _live()
        os._exit(0)
    _note(pid)
    return torch.ones(2, device=device)


def hangs(device: torch.device) -> torch.Tensor:
    _live()
    return torch.ones(2, device=device)

"""SIGTERM, SIGINT and SIGHUP while `cudalint smoke` waits for its target.

A CI cancel or `timeout` sends SIGTERM to smoke, and Ctrl-C sends SIGINT to the terminal's
foreground group, which the target (in a session of its own) is not in: smoke passes the
signal on to the target's process group, reports what it had, and exits with the signal's
status (128 + n). The target can reach smoke too: `os.getppid()` is smoke's pid. So smoke does
not take these signals by a handler, which cannot tell who sent them, but holds them blocked
(`Held`) and takes them one at a time with `sigtimedwait`, whose answer names the sender: one
of the run's own processes (the child, anything in its session, anything carrying the run's
mark) is noted and ignored; any other stops the run.

The signals are blocked from before torch is imported (its threads inherit the mask, so none
of them takes the signal instead) until the report is written; the worker child unblocks them
first thing (`release`). Where the platform has no `sigtimedwait` (macOS), a handler takes
them instead: any signal stops the run and is reported, the target's own included (a handler
cannot tell them apart), so that a target signalling its parent still gets its report, as a
stopped run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType

STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
SUPPORTED = hasattr(signal, "sigtimedwait") and hasattr(signal, "pthread_sigmask")


@dataclass
class Held:
    """The signals held while a run goes on: the first from outside (`stop`), and those the
    run's own processes sent (`ignored`, as lines for the report)."""

    stop: int | None = None
    ignored: list[str] = field(default_factory=list)
    # Without sigtimedwait: the signals a handler took, and how many `wait` has returned.
    by_handler: bool = False
    taken: list[int] = field(default_factory=list)
    returned: int = 0

    @property
    def stop_name(self) -> str:
        return signal.Signals(self.stop).name if self.stop else ""

    def wait(self, seconds: float, child: int, mark: bytes | None) -> int | None:
        """Wait up to `seconds` for a held signal: the number of one from outside the run
        (recorded in `stop`), None when none came (or only the run's own, noted)."""
        if self.by_handler:
            time.sleep(max(seconds, 0.0))  # a handled signal cuts the sleep short
            if self.returned < len(self.taken):
                self.returned = len(self.taken)
                return self.taken[-1]
            return None
        info = signal.sigtimedwait(STOPPING, max(seconds, 0.0))
        if info is None:
            return None
        sender = info.si_pid
        if sender > 0 and of_the_run(sender, child, mark):
            self.ignored.append(f"a process of the run (pid {sender}) sent "
                                f"{signal.Signals(info.si_signo).name} to cudalint smoke; "
                                "ignored, the run went on")
            return None
        if self.stop is None:
            self.stop = info.si_signo
        return info.si_signo

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.taken.append(signum)
        if self.stop is None:
            self.stop = signum

    def take_pending(self) -> None:
        """Take the held signals that came after the run (while the report was made), so that
        none is delivered when the mask is restored, and note one from outside."""
        if self.by_handler:
            return
        while set(STOPPING) & signal.sigpending():
            info = signal.sigtimedwait(STOPPING, 0)
            if info is None:
                return
            if self.stop is None:
                self.stop = info.si_signo


@contextlib.contextmanager
def held() -> Iterator[Held]:
    """Block STOPPING in this thread (and in every thread started meanwhile) for the block;
    where that cannot be done, handle them (`Held.by_handler`)."""
    if not SUPPORTED:
        with _handled() as state:
            yield state
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    state = Held()
    try:
        yield state
    finally:
        state.take_pending()
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextlib.contextmanager
def _handled() -> Iterator[Held]:
    state = Held(by_handler=True)
    before = {signum: signal.signal(signum, state.handle) for signum in STOPPING}
    try:
        yield state
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def release() -> None:
    """Unblock STOPPING (the worker child inherits its parent's mask; the target must get
    them as any program does)."""
    if SUPPORTED:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)


def of_the_run(pid: int, child: int, mark: bytes | None) -> bool:
    """Whether `pid` is the run's child, in the child's session (which the child leads), or a
    process carrying the run's mark in its environment (one that left the session)."""
    if pid == child:
        return True
    with contextlib.suppress(OSError):
        if os.getsid(pid) == child:
            return True
    return mark is not None and carries(pid, mark)


def carries(pid: int, entry: bytes) -> bool:
    """Whether the environment of process `pid` holds `entry` (`NAME=value`), as the kernel
    shows it (/proc, Linux); False for a process gone, not ours, or with no /proc."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            return entry in file.read().split(b"\0")
    except OSError:
        return False

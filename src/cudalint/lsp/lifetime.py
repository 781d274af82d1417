"""The server's end when its editor goes without saying so: the process that `initialize` names
(`processId`) is polled, and the server leaves when it is gone."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

POLL_SECONDS = 1.0
EXIT_ORPHANED = 1


def is_alive(pid: int) -> bool:
    """Whether process `pid` exists (signal 0 only checks; a process of another user is alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def watch(pid: int, on_gone: Callable[[], None], interval: float = POLL_SECONDS) -> None:
    """Call `on_gone` from a daemon thread once `pid` has gone. POSIX only: on Windows, signal 0
    would terminate the process instead of probing it, so nothing is watched there."""
    if os.name != "posix" or pid <= 0:
        return

    def poll() -> None:
        while is_alive(pid):
            time.sleep(interval)
        logger.info("the editor (process %d) has gone; exiting", pid)
        on_gone()

    threading.Thread(target=poll, name="cudalint-parent-watch", daemon=True).start()


def leave(code: int = EXIT_ORPHANED) -> None:
    """End the process now, without waiting for a check under way (it cannot be interrupted)
    or for a thread blocked reading a pipe that nobody will close."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)

"""One worker thread for the server's checks, off the event loop: each task waits out its delay
(the debounce), and a newer task for the same key replaces one that has not started yet, so a
burst of edits costs one check of the last version, not one check per keystroke."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

logger = logging.getLogger(__name__)

Task = Callable[[], None]


class Scheduler:
    def __init__(self) -> None:
        self._due: dict[Hashable, tuple[float, Task]] = {}
        self._changed = threading.Condition()
        self._stopped = False
        # A daemon: a check still running when the client goes must not keep the process alive.
        self._thread = threading.Thread(target=self._work, name="cudalint-checks", daemon=True)
        self._thread.start()

    def submit(self, key: Hashable, task: Task, delay: float = 0.0) -> None:
        """Run `task` after `delay` seconds, instead of any task for `key` not yet started."""
        with self._changed:
            self._due[key] = (time.monotonic() + delay, task)
            self._changed.notify()

    def hurry(self, key: Hashable) -> bool:
        """Run the task for `key` now; False when there is none waiting (it runs, or has)."""
        with self._changed:
            if key not in self._due:
                return False
            self._due[key] = (time.monotonic(), self._due[key][1])
            self._changed.notify()
            return True

    def cancel(self, key: Hashable) -> None:
        """Drop the task for `key` if it has not started."""
        with self._changed:
            self._due.pop(key, None)

    def stop(self) -> None:
        """Drop what has not started; the task running, if any, is the last."""
        with self._changed:
            self._stopped = True
            self._due.clear()
            self._changed.notify()

    def _work(self) -> None:
        while (task := self._next()) is not None:
            try:
                task()
            except Exception:  # the worker outlives a failing task
                logger.exception("a background check failed")

    def _next(self) -> Task | None:
        with self._changed:
            while not self._stopped:
                if not self._due:
                    self._changed.wait()
                    continue
                key, (due, task) = min(self._due.items(), key=lambda item: item[1][0])
                left = due - time.monotonic()
                if left > 0:
                    self._changed.wait(left)
                    continue
                del self._due[key]
                return task
        return None

"""The progress bar: drawn on a terminal, for the human formats, once a run has lasted a
second; never when the output is piped or machine-readable. rich is imported only to draw."""

from __future__ import annotations

import time
from collections.abc import Callable

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from typing import IO, Any

DELAY_S = 1.0  # a run that ends sooner shows no bar
HUMAN_FORMATS = frozenset({"full", "concise"})


def wants_progress(output_format: str, quiet: bool, stdout: IO[str], stderr: IO[str]) -> bool:
    """A bar for a person watching: a human format on a terminal, drawn on stderr."""
    return output_format in HUMAN_FORMATS and not quiet and stdout.isatty() and stderr.isatty()


class DelayedProgress:
    """A `run` progress callback that starts a transient rich bar after `delay` seconds."""

    def __init__(self, stream: IO[str], delay: float = DELAY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._delay = delay
        self._clock = clock
        self._start = clock()
        self._bar: Any = None
        self._task: Any = None

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            if done >= total or self._clock() - self._start < self._delay:
                return
            self._show(total)
        self._bar.update(self._task, completed=done, total=total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()

    def _show(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        console = Console(file=self._stream)
        self._bar = Progress("checking", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                             console=console, transient=True)
        self._task = self._bar.add_task("check", total=total)
        self._bar.start()

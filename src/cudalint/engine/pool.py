"""Running one function over many items, in this process or in worker processes, so that
Ctrl-C stops cleanly: nothing new starts, the item in flight is finished, and the results
finished so far come back. Workers die with the process that started them, even when it is
killed with SIGKILL (they would otherwise wait for work forever)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future

Item = TypeVar("Item")
Result = TypeVar("Result")

CHUNK = 8  # items sent to a worker at once
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_interrupted = threading.Event()  # in a worker: Ctrl-C was pressed, take no new item


def run_all(
    function: Callable[[Item], Result],
    items: Sequence[Item],
    jobs: int,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[Result], bool]:
    """The results in the order of `items`, and whether Ctrl-C cut the run short (then the
    results are those of the items finished). `progress` is told how many are done."""
    if jobs < 2:
        return _run_here(function, items, progress)
    from concurrent.futures import ProcessPoolExecutor  # imported only when needed

    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker,
                               initargs=(os.getpid(),))
    futures: list[Future[list[Result]]] = []
    try:
        for start in range(0, len(items), CHUNK):
            futures.append(pool.submit(_run_chunk, function, items[start : start + CHUNK]))
        results: list[Result] = []
        for future in futures:
            results += future.result()
            if progress is not None:
                progress(len(results))
    except KeyboardInterrupt:
        pool.shutdown(wait=True, cancel_futures=True)
        return _finished(futures), True
    pool.shutdown()
    return results, False


def _run_here(
    function: Callable[[Item], Result],
    items: Sequence[Item],
    progress: Callable[[int], None] | None,
) -> tuple[list[Result], bool]:
    results: list[Result] = []
    try:
        for item in items:
            results.append(function(item))
            if progress is not None:
                progress(len(results))
    except KeyboardInterrupt:
        return results, True
    return results, False


def _run_chunk(function: Callable[[Item], Result], items: Sequence[Item]) -> list[Result]:
    results: list[Result] = []
    for item in items:
        if _interrupted.is_set():
            break
        results.append(function(item))
    return results


def _finished(futures: list[Future[list[Result]]]) -> list[Result]:
    return [
        result
        for future in futures
        if future.done() and not future.cancelled() and future.exception() is None
        for result in future.result()
    ]


def _start_worker(parent: int) -> None:
    """In each worker: Ctrl-C (sent to the whole process group) only stops taking new items,
    and the worker ends when its parent does."""
    signal.signal(signal.SIGINT, lambda _number, _frame: _interrupted.set())
    if not _die_with_parent():
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # the parent died before the worker could ask to follow it
        os._exit(1)


def _die_with_parent() -> bool:
    """Ask Linux to kill this process when its parent dies; False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) == 0
    return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)

"""Running one function over many items, in this process or in worker processes.

Ctrl-C stops cleanly: nothing new starts, each worker finishes the item in flight, and the
results finished so far come back. A worker that dies (SIGKILL, the OOM killer, a segfault in a
C extension) costs only the item it was on: that item's result is `on_death(item, reason)`, a
fresh worker takes the rest. Each worker's address space is capped at its size when it started
plus `memory_limit` (RLIMIT_AS), so that one file cannot take the machine's memory: Python
raises MemoryError, and native code that cannot allocate aborts its worker. Workers die with the
process that started them, even when it is killed with SIGKILL (they would otherwise wait for
work forever); they get SIGTERM, which lets a write in hand finish (cudalint.writing)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

Item = TypeVar("Item")
Result = TypeVar("Result")

CHUNK = 8  # items sent to a worker at once
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_interrupted = threading.Event()  # in a worker: Ctrl-C was pressed, take no new item
_POLL = 0.2  # seconds between looks at the Ctrl-C flag while waiting for workers


def run_all(
    function: Callable[[Item], Result],
    items: Sequence[Item],
    jobs: int,
    progress: Callable[[int], None] | None = None,
    on_death: Callable[[Item, str], Result] | None = None,
    memory_limit: int | None = None,
    isolate: bool = False,
) -> tuple[list[Result], bool]:
    """The results in the order of `items`, and whether Ctrl-C cut the run short (then the
    results are those of the items finished). `progress` is told how many are done. Without
    `on_death`, a worker that dies ends the run with RuntimeError. `isolate`: in a worker
    process (capped at `memory_limit`) even for one job."""
    if jobs < 2 and not isolate:
        return _run_here(function, items, progress)
    pool = _Pool(function, items, jobs, progress, on_death, memory_limit)
    with _sigint_noted(pool.interrupt):
        pool.run()
    return [pool.results[index] for index in sorted(pool.results)], pool.interrupted


def _run_here(
    function: Callable[[Item], Result],
    items: Sequence[Item],
    progress: Callable[[int], None] | None,
) -> tuple[list[Result], bool]:
    results: list[Result] = []
    try:
        with _sigterm_as_ctrl_c():
            for item in items:
                results.append(function(item))
                if progress is not None:
                    progress(len(results))
    except KeyboardInterrupt:
        return results, True
    return results, False


def _raise_interrupt(_number: int, _frame: object) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _sigterm_as_ctrl_c() -> Any:
    """SIGTERM (`kill`, a CI runner's timeout, systemd) stops a run in this process as Ctrl-C
    does: the file in hand is finished (a write defers it: cudalint.writing), then the
    run stops with what it has done."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass
class _Worker:
    process: BaseProcess
    connection: Connection
    in_flight: list[int] = field(default_factory=list)  # indices sent, not yet answered
    busy: bool = False  # a chunk was sent and its end not yet acknowledged
    told: bool = False  # sent SIGINT after Ctrl-C


@dataclass
class _Pool(Generic[Item, Result]):
    function: Callable[[Item], Result]
    items: Sequence[Item]
    jobs: int
    progress: Callable[[int], None] | None
    on_death: Callable[[Item, str], Result] | None
    memory_limit: int | None
    results: dict[int, Result] = field(default_factory=dict)
    interrupted: bool = False
    pending: deque[int] = field(default_factory=deque)  # indices not yet sent to a worker
    workers: list[_Worker] = field(default_factory=list)

    def run(self) -> None:
        self.pending.extend(range(len(self.items)))
        self.workers = [self._start() for _ in range(min(self.jobs, len(self.items)))]
        try:
            while any(worker.busy for worker in self.workers) or (
                    self.pending and not self.interrupted):
                self._dispatch()
                if self.interrupted:
                    self._tell_workers()
                self._collect()
        finally:
            self._stop_all()

    def interrupt(self) -> None:
        """Ctrl-C reached this process (a signal handler: only note it)."""
        self.interrupted = True

    def _tell_workers(self) -> None:
        """Workers finish their item and take no other; the terminal's Ctrl-C reached them
        already, a `kill -INT` of this process only did not."""
        for worker in self.workers:
            if worker.busy and not worker.told and worker.process.pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(worker.process.pid, signal.SIGINT)
                worker.told = True

    def _start(self) -> _Worker:
        import multiprocessing  # only when a run uses workers

        ours, theirs = multiprocessing.Pipe()
        process = multiprocessing.Process(
            target=_serve, args=(theirs, self.function, os.getpid(), self.memory_limit),
            daemon=True)
        process.start()
        theirs.close()
        return _Worker(process, ours)

    def _dispatch(self) -> None:
        for position, worker in enumerate(self.workers):
            if worker.busy or not self.pending or self.interrupted:
                continue
            if not worker.process.is_alive():  # it died idle, checking nothing
                worker = self.workers[position] = self._start()
            count = min(CHUNK, len(self.pending))
            worker.in_flight = [self.pending.popleft() for _ in range(count)]
            worker.busy = True
            worker.connection.send([(index, self.items[index]) for index in worker.in_flight])

    def _collect(self) -> None:
        from multiprocessing.connection import wait

        busy = [worker for worker in self.workers if worker.busy]
        ready = set(wait([w.connection for w in busy] + [w.process.sentinel for w in busy],
                         timeout=_POLL))
        for worker in busy:
            if worker.connection in ready or worker.process.sentinel in ready:
                self._receive(worker)

    def _receive(self, worker: _Worker) -> None:
        try:
            while worker.connection.poll():
                self._take(worker, worker.connection.recv())
        except (EOFError, OSError):
            pass
        if worker.busy and not worker.process.is_alive():
            self._replace(worker)

    def _take(self, worker: _Worker, message: tuple[str, int, Any] | None) -> None:
        if message is None:  # the chunk is done, or cut short by Ctrl-C
            self.pending.extendleft(reversed(worker.in_flight))
            worker.in_flight, worker.busy = [], False
            return
        outcome, index, value = message
        if outcome == "raised":
            raise value
        worker.in_flight.remove(index)
        self._record(index, value)

    def _record(self, index: int, result: Result) -> None:
        self.results[index] = result
        if self.progress is not None:
            self.progress(len(self.results))

    def _replace(self, worker: _Worker) -> None:
        """The worker died on the first item it had not answered: that item's result says so,
        the rest of its chunk goes back to the queue, a fresh worker takes its place."""
        worker.process.join()
        worker.connection.close()
        if worker.in_flight:  # else it died between its last answer and the chunk's end
            culprit, *rest = worker.in_flight
            reason = died(worker.process.exitcode, self.memory_limit is not None)
            if self.on_death is None:
                raise RuntimeError(reason)
            self._record(culprit, self.on_death(self.items[culprit], reason))
            self.pending.extendleft(reversed(rest))
        worker.in_flight, worker.busy = [], False
        if not self.interrupted:
            self.workers[self.workers.index(worker)] = self._start()

    def _stop_all(self) -> None:
        for worker in self.workers:
            with contextlib.suppress(OSError, ValueError):
                worker.connection.send(None)
        deadline = time.monotonic() + 5
        for worker in self.workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            with contextlib.suppress(OSError):
                worker.connection.close()


def died(exitcode: int | None, capped: bool = False) -> str:
    """Why a worker ended, for the error line of the file it was checking. Native code (the
    LibCST parser) that cannot allocate aborts, so under a memory cap SIGABRT says why."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "unknown"
        cause = (", most likely out of memory (max-memory)"
                 if capped and -exitcode == signal.SIGABRT else "")
        return (f"the checker process died (signal {-exitcode}, {name}{cause}) while checking "
                "this file; not checked")
    return (f"the checker process ended (exit status {exitcode}) while checking this file; "
            "not checked")


@contextlib.contextmanager
def _sigint_noted(note: Callable[[], None]) -> Any:
    """Ctrl-C (and SIGTERM, which stops a run as Ctrl-C does) calls `note` instead of raising
    KeyboardInterrupt wherever the main loop is, so no result is lost between receiving and
    recording it (signals reach the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, lambda _number, _frame: note())
                for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _serve(connection: Connection, function: Callable[[Any], Any], parent: int,
           memory_limit: int | None) -> None:
    """A worker: chunks of (index, item) in, one (outcome, index, value) per item out, then
    None when the chunk is done; ends when told to (None) or when its parent is gone."""
    _start_worker(parent, memory_limit)
    while True:
        try:
            chunk = connection.recv()
        except (EOFError, OSError):
            return
        if chunk is None:
            return
        for index, item in chunk:
            if _interrupted.is_set():
                break
            connection.send(_outcome(function, index, item))
        connection.send(None)


def _outcome(function: Callable[[Any], Any], index: int, item: Any) -> tuple[str, int, Any]:
    try:
        return "done", index, function(item)
    except Exception as error:  # the main process raises it, as it would have raised it
        return "raised", index, error


def _start_worker(parent: int, memory_limit: int | None) -> None:
    """In each worker: Ctrl-C (sent to the whole process group) only stops taking new items,
    the worker ends when its parent does, and its memory is capped."""
    signal.signal(signal.SIGINT, lambda _number, _frame: _interrupted.set())
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if not _die_with_parent():
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # the parent died before the worker could ask to follow it
        os._exit(1)
    if memory_limit is not None:
        _cap_memory(memory_limit)


def _cap_memory(limit: int) -> None:
    """RLIMIT_AS at the address space this worker has now, plus `limit`; Linux only (macOS
    does not enforce RLIMIT_AS)."""
    used = _address_space()
    if used is None:
        return
    import resource

    with contextlib.suppress(OSError, ValueError):
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard == resource.RLIM_INFINITY or used + limit < hard:
            resource.setrlimit(resource.RLIMIT_AS, (used + limit, hard))


def _address_space() -> int | None:
    """This process's virtual memory size in bytes; None where /proc cannot tell."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _die_with_parent() -> bool:
    """Ask Linux to kill this process when its parent dies; False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        # SIGTERM: a write in progress finishes first (cudalint.writing), then the worker ends.
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM) == 0
    return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)

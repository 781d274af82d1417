"""A whole run: discover files, pick the rules for each, check (and fix) each file by kind."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path

from cudalint.config import (
    DEFAULT_MAX_FILE_SIZE,
    DEFAULT_MAX_MEMORY,
    Config,
    Selection,
)
from cudalint.engine.checkers.job import Checker, FileReport, Job, isolated
from cudalint.engine.checkers.other import check_other
from cudalint.engine.checkers.python import check_python
from cudalint.engine.project import facts as project
from cudalint.engine.reading.reader import (
    MAX_BINARY_SIZE,
    MOST_MEMORY_PER_SOURCE_BYTE,
    ReadError,
    read_regular,
    require_memory,
)
from cudalint.engine.running.cache import Cache, Snapshot, Status, Store, file_status
from cudalint.engine.running.collector import HeldOff
from cudalint.engine.running.discovery import discover
from cudalint.engine.running.project_facts import ProjectFacts
from cudalint.engine.settings import Settings
from cudalint.finding import error_finding
from cudalint.kinds import FileKind
from cudalint.record import Record

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from typing import Any

    from cudalint.engine.contract import Catalogue, Rule


class RunOptions(Record):
    """How a run checks its files (a mutable record)."""

    __slots__ = ("cache", "diff", "extend_select", "fix", "force_exclude", "ignore",
                 "in_memory", "jobs", "lint_cache", "max_file_size", "max_memory", "select",
                 "unsafe_fixes", "want_edits")
    FIELDS = ("fix", "unsafe_fixes", "diff", "want_edits", "force_exclude", "jobs",
              "in_memory", "select", "ignore", "extend_select", "cache", "lint_cache",
              "max_file_size", "max_memory")
    __hash__ = None  # type: ignore[assignment]

    def __init__(
        self,
        fix: bool = False,
        unsafe_fixes: bool = False,
        diff: bool = False,  # show the fixes as a diff; write nothing
        want_edits: bool = False,  # compute each fix's text edits (json, sarif, the LSP)
        force_exclude: bool = False,  # apply excludes to files named explicitly too
        jobs: int | None = None,  # processes; None: one per CPU
        in_memory: bool = False,  # keep a fixed file in its report instead of writing it
        select: list[str] | None = None,  # override the configuration's
        ignore: list[str] | None = None,
        extend_select: list[str] | None = None,  # None: []
        cache: bool = False,  # read and write the project's lint cache (the CLI does)
        lint_cache: Store | None = None,  # where the workers record their checks (`run`)
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,  # the configuration's, set by `run`
        max_memory: int = DEFAULT_MAX_MEMORY,  # the configuration's, set by `run`
    ) -> None:
        self.fix = fix
        self.unsafe_fixes = unsafe_fixes
        self.diff = diff
        self.want_edits = want_edits
        self.force_exclude = force_exclude
        self.jobs = jobs
        self.in_memory = in_memory
        self.select = select
        self.ignore = ignore
        self.extend_select = [] if extend_select is None else extend_select
        self.cache = cache
        self.lint_cache = lint_cache
        self.max_file_size = max_file_size
        self.max_memory = max_memory


def checker_for(kind: FileKind) -> Checker:
    """The checker of a file kind. The notebook checker (and JSON with it) is imported when
    the first notebook comes up."""
    if kind is FileKind.PYTHON:
        return check_python
    if kind is FileKind.NOTEBOOK:
        from cudalint.engine.checkers.notebook import check_notebook

        return check_notebook
    return check_other


def selected_rules(registry: Catalogue, config: Config, options: RunOptions,
                   kinds: Iterable[FileKind] | None = None,
                   texts: Sequence[bytes] | None = None) -> tuple[type[Rule], ...]:
    """The rules of `registry` (cudalint.rules) enabled; with `kinds`, only those that read
    files of these kinds are imported and returned (every rule reads at least one kind); with
    `texts` too (every file to check, all Python), only those whose terms one of them names
    (rules/index.py)."""
    candidates = None if kinds is None else registry.for_kinds(kinds, texts)
    return registry.select(_sources(config, options), candidates)


def _sources(config: Config, options: RunOptions) -> list[Selection]:
    """The configuration's choice of rules, then the command line's, resolved as ruff does."""
    return [Selection(config.select, config.extend_select, config.ignore),
            Selection(options.select, options.extend_select, options.ignore or [])]


def _selection(config: Config, options: RunOptions) -> object:
    """What picks the rules of every file, for the cache's keys: the rules themselves are not
    imported by a run that only replays (the cache's fingerprint of cudalint's own files
    stands for the rules each selector names)."""
    per_file = sorted((glob, sorted(codes)) for glob, codes in config.per_file_ignores.items())
    return [_sources(config, options), per_file, str(config.root), config.max_file_size,
            config.max_memory]


Progress = Callable[[int, int], None]  # called with (files done, files in all) after each


def run(
    paths: Sequence[Path], config: Config, options: RunOptions, progress: Progress | None = None,
    *, registry: Catalogue,
) -> list[FileReport]:
    """Every file's report, in path order, checked with the rules of `registry`
    (cudalint.rules: a run replayed from the cache imports none of them). Ctrl-C raises
    `Interrupted` with the reports of the files finished so far (the files written among
    them)."""
    options = options.replace(max_file_size=config.max_file_size, max_memory=config.max_memory)
    unreadable: list[tuple[Path, str]] = []
    found = discover(paths, config, force_exclude=options.force_exclude, errors=unreadable,
                     writing=options.fix and not options.diff and not options.in_memory)
    lint_cache = _open_cache(config, options)
    fixing = options.fix or options.diff
    facts = ProjectFacts(config, cache=options.cache, writing=not fixing)
    files = [(path, kind, facts.for_file(path, kind, fixing=fixing)) for path, kind in found
             if kind is not FileKind.PYTHON or not facts.is_helper_copy(path)]
    reports = [FileReport(path, [error_finding(path, reason)]) for path, reason in unreadable]
    if lint_cache is not None:
        options = options.replace(lint_cache=lint_cache.store)
        replayed, files = replay(lint_cache, files, options)
        reports += replayed
    read = _read_small_run(files, options)
    texts = None if read is None else [data for data, _status in read.values()]
    enabled = (selected_rules(registry, config, options, {kind for _, kind, _ in files}, texts)
               if files else ())
    tasks = [(path, kind, rules_for(path, enabled, config), file_settings, options,
              *(read or {}).get(path, ()))
             for path, kind, file_settings in files]
    counted = None if progress is None else (lambda done: progress(done, len(tasks)))
    try:
        reports += check_all(tasks, pool_size(options.jobs, len(tasks)), counted,
                             memory_limit=options.max_memory)
    except Interrupted as stop:
        stop.reports[:0] = reports
        if options.fix and not options.diff:  # the files written import it
            write_helpers(stop.reports)
        raise
    if options.fix and not options.diff:
        write_helpers(reports)
    elif options.diff:
        from cudalint.engine.running import helpers

        reports += helpers.diffs(helpers.plan(reports))
    if lint_cache is not None:
        for report in reports:
            if report.cache_entry is not None:
                lint_cache.put(report.path, report.cache_entry)
        lint_cache.save()
    return sorted(reports, key=lambda report: report.path)


# A run of at most this many Python files reads them first and imports only the rules whose
# terms they name (most of a small check's start-up is importing rules); each file is
# checked from that reading. Not when fixing: a fix writes text (`pick_device(0)`) that
# another rule's terms may name.
_SMALL_RUN = 16


def _read_small_run(files: Sequence[PendingFile],
                    options: RunOptions) -> dict[Path, tuple[bytes, Status | None]] | None:
    """Each file's content, and its status taken before the read (for the cache), for a
    small run of Python files; None for any other run."""
    if (len(files) > _SMALL_RUN or options.fix or options.diff
            or any(kind is not FileKind.PYTHON for _, kind, _ in files)):
        return None
    read = {}
    for path, kind, _settings in files:
        status = file_status(path) if options.lint_cache is not None else None
        try:
            read[path] = (_read(path, kind, options), status)
        except ReadError:  # the check reports why
            continue
    return read


def _open_cache(config: Config, options: RunOptions) -> Cache | None:
    if not options.cache or options.fix or options.diff:
        return None
    return Cache.open(config.root, options.want_edits, _selection(config, options))


def _facts(kind: FileKind, data: bytes) -> Any:
    return project.file_facts(data) if kind is FileKind.PYTHON else None


def write_helpers(reports: Sequence[FileReport]) -> None:
    """Write (or extend) the standalone helper each fixed file now imports."""
    from cudalint.engine.running import helpers  # only after --fix

    helpers.write(helpers.plan(reports))


# Below this many files a second process costs more than it saves.
_FILES_PER_PROCESS = 16


def pool_size(requested: int | None, files: int) -> int:
    """Processes for a run: `--jobs`, else one per core this process may use; one under
    pre-commit, which already runs a hook per core, each on its own share of the files."""
    if requested is None and os.environ.get("PRE_COMMIT"):
        return 1
    return max(1, min(requested or _usable_cores(), files // _FILES_PER_PROCESS))


def _usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):  # a container or `taskset` may allow fewer than all
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


if TYPE_CHECKING:
    Task = tuple[Path, FileKind, tuple[type[Rule], ...], Settings, RunOptions] | tuple[
        Path, FileKind, tuple[type[Rule], ...], Settings, RunOptions, bytes, Status | None]


class Interrupted(Exception):
    """Ctrl-C: the reports of the files finished before it (each file is whole: fixed and
    written, or left as it was)."""

    def __init__(self, reports: list[FileReport]) -> None:
        super().__init__("interrupted")
        self.reports = reports


def check_all(tasks: Sequence[Task], jobs: int,
              progress: Callable[[int], None] | None = None,
              memory_limit: int | None = None) -> list[FileReport]:
    """Each file checked on its own (in `jobs` processes, each with `memory_limit` bytes for
    its file), so they share nothing but results; a worker that dies is its file's error line."""
    if not tasks:  # every file came from the cache
        return []
    from cudalint.engine.running import pool  # multiprocessing: only when a run checks files

    # A file that may need more than max-memory is checked in a worker capped at it, even in
    # a run that would check in this process (which has the prediction only).
    isolate = jobs < 2 and memory_limit is not None and any(
        _size(task) * MOST_MEMORY_PER_SOURCE_BYTE > memory_limit for task in tasks)
    in_workers = jobs >= 2 or isolate
    function = _check_in_worker if in_workers else _check_task
    ordered = _largest_first(tasks) if in_workers else tasks
    reports, interrupted = pool.run_all(function, ordered, jobs, progress, on_death=_died_on,
                                        memory_limit=memory_limit, isolate=isolate)
    if ordered is not tasks:
        reports.sort(key=lambda report: report.path)
    if interrupted:
        raise Interrupted(reports)
    return reports


def _largest_first(tasks: Sequence[Task]) -> list[Task]:
    """The tasks, largest file first: the processes then end together, rather than one
    checking the largest file alone at the end (a file's cost grows with its size)."""
    return sorted(tasks, key=_size, reverse=True)


def _size(task: Task) -> int:
    try:
        return os.stat(task[0]).st_size
    except OSError:
        return 0


def _check_task(task: Task) -> FileReport:
    return check_file(*task)


# For tests only: a worker process that comes to the file of this name kills itself with
# SIGKILL, as the OOM killer or a crash in a C extension would end it.
KILL_WORKER_ON = "CUDALINT_TEST_KILL_WORKER_ON"


def _check_in_worker(task: Task) -> FileReport:
    if task[0].name == os.environ.get(KILL_WORKER_ON):
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
    return check_file(*task)


def _died_on(task: Task, reason: str) -> FileReport:
    return FileReport(task[0], [error_finding(task[0], reason, undone=True)])


def check_file(
    path: Path,
    kind: FileKind,
    rules: Sequence[type[Rule]],
    settings: Settings,
    options: RunOptions,
    data: bytes | None = None,
    status: Status | None = None,
) -> FileReport:
    """Check one file (from `data` when given: an editor's unsaved buffer, or the file as the
    run read it, with its `status` before that read), the cyclic garbage collector held off
    meanwhile (cudalint.engine.running.collector)."""
    with HeldOff():
        return _check_file(path, kind, rules, settings, options, data, status)


def _check_file(
    path: Path,
    kind: FileKind,
    rules: Sequence[type[Rule]],
    settings: Settings,
    options: RunOptions,
    data: bytes | None,
    status: Status | None,
) -> FileReport:
    if options.lint_cache is not None:
        return _check_and_store(options.lint_cache, path, kind, rules, settings, options,
                                data, status)
    if data is None:
        try:
            data = _read(path, kind, options)
        except ReadError as error:
            return FileReport(path, [error_finding(path, str(error))])
    from cudalint.engine.contract import FileRule, PythonRule
    from cudalint.engine.first_pass.prefilter import Prefilter  # `ast`: only to check a file

    python_rules = tuple(r for r in rules if issubclass(r, PythonRule))
    job = Job(
        path=path,
        kind=kind,
        data=data,
        python_rules=python_rules,
        file_rules=tuple(r() for r in rules if issubclass(r, FileRule) and kind in r.file_kinds),
        settings=settings,
        prefilter=Prefilter.for_rules(python_rules, settings),
        options=options,
    )
    report = isolated(checker_for(kind), job)
    if (options.fix and not options.diff and not options.in_memory and not report.written
            and settings.helper_file is not None):
        _require_helper(report, data, settings)
    return _lean(report)


def _require_helper(report: FileReport, data: bytes, settings: Settings) -> None:
    """A file that imports the project's helper (fixed by an earlier run, one cut short
    before it wrote the helper) finds it: every --fix run writes it where it is missing."""
    module, place = settings.helper_module, settings.helper_file
    if place is None or module.encode() not in data:
        return
    from cudalint.engine.checkers.job import imported_helpers
    from cudalint.engine.fixes.helper_file import ensure_helper
    from cudalint.writing import WriteError

    names = imported_helpers(data.decode("utf-8", errors="replace"), module)
    if not names:
        return
    try:
        written = ensure_helper(place, names)
    except WriteError as error:
        reason = str(error).removeprefix("not written: ")
        report.findings.insert(0, error_finding(report.path, f"{reason} (the file imports it)",
                                                       undone=True))
        return
    report.helper, report.helper_names = place, report.helper_names | names
    report.helper_written = report.helper_written or written


def _lean(report: FileReport) -> FileReport:
    """The report without the file's text when no finding needs it: the text serves the
    source excerpts of findings (and the cache keeps it for them), and a worker sends its
    reports back to the run's process whole (over the torch package, 45 MB of text)."""
    if not report.findings:
        report.text = None
    return report


def _read(path: Path, kind: FileKind, options: RunOptions) -> bytes:
    data = _read_sized(path, kind, options)
    if kind is FileKind.PYTHON:
        require_memory(len(data), options.max_memory)
    return data


def _read_sized(path: Path, kind: FileKind, options: RunOptions) -> bytes:
    limit = options.max_file_size
    if kind is FileKind.SHARED_LIBRARY:
        return read_regular(path, max(limit, MAX_BINARY_SIZE))
    return read_regular(path, limit)


if TYPE_CHECKING:
    PendingFile = tuple[Path, FileKind, Settings]


def replay(cache: Cache, files: Sequence[PendingFile],
           options: RunOptions) -> tuple[list[FileReport], list[PendingFile]]:
    """The reports the cache holds, and the files left to check. The lookups happen here, in
    the run's own process, before any rule is imported: a run whose files all hit costs a
    status and a lookup per file (a read and a hash where the status changed), and starts no
    worker."""
    reports, left = [], []
    for path, kind, settings in files:
        snapshot = cache.snapshot(path, partial(_read_sized, kind=kind, options=options),
                                  partial(_facts, kind))
        hit = None if snapshot is None else cache.load(path, kind, settings, snapshot)
        if hit is None:  # a file that cannot be read is left to the check, which says why
            left.append((path, kind, settings))
        else:
            reports.append(FileReport(path, *hit))
    return reports, left


def _check_and_store(
    store: Store,
    path: Path,
    kind: FileKind,
    rules: Sequence[type[Rule]],
    settings: Settings,
    options: RunOptions,
    data: bytes | None = None,
    status: Status | None = None,
) -> FileReport:
    """A file the cache did not hold (`replay`), checked; its report carries the cache entry
    for the run's process to record (its status taken before the content is read)."""
    uncached = options.replace(lint_cache=None)
    if data is None:
        status = file_status(path)
        try:
            data = _read(path, kind, options)
        except ReadError:
            return check_file(path, kind, rules, settings, uncached)  # reports why
    report = check_file(path, kind, rules, settings, uncached, data)
    snapshot = Snapshot.of(data, _facts(kind, data), status)
    report.cache_entry = store.entry(path, kind, settings, snapshot, report.findings,
                                     report.text)
    return report


def rules_for(path: Path, enabled: Sequence[type[Rule]], config: Config) -> tuple[type[Rule], ...]:
    ignored = [
        code.upper()
        for pattern, codes in config.per_file_ignores.items()
        if _matches(path, pattern, config.root)
        for code in codes
    ]
    if not ignored:
        return tuple(enabled)
    return tuple(r for r in enabled if not any(r.code.startswith(c) for c in ignored))


def _matches(path: Path, pattern: str, root: Path) -> bool:
    try:
        relative = path.resolve().relative_to(root).as_posix()
    except ValueError:
        relative = path.as_posix()
    return fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path.name, pattern)


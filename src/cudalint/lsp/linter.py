"""The checks of open documents. Each check reads a snapshot of one version of a document, taken
on the event loop, and runs on the scheduler's worker thread; its result comes back to the loop,
which caches it for that version and publishes it only if the document is still at that version.
An edit made meanwhile supersedes the check: its result is never published."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument, Workspace

from cudalint.config import ConfigError
from cudalint.engine.lint.python import BOM
from cudalint.finding import Finding
from cudalint.kinds import FileKind
from cudalint.lsp import checker, notebooks, rehearsal
from cudalint.lsp.checker import Rows, Snapshot
from cudalint.lsp.diagnostics import message_diagnostic, to_diagnostic
from cudalint.lsp.forms import Form
from cudalint.lsp.incremental import UnitCache
from cudalint.lsp.opening import FirstCheck, Opening
from cudalint.lsp.published import Published, form_of
from cudalint.lsp.results import Results
from cudalint.lsp.scheduler import Scheduler
from cudalint.lsp.suppress import Noqa

logger = logging.getLogger(__name__)

T = TypeVar("T")
Diagnostics = list[types.Diagnostic]
# Diagnostics with their actions' edits, made by reading the units that hold some rows (None:
# the whole document): other rows' diagnostics may be missing.
Actionable = tuple[Rows | None, Diagnostics]
# What the worker makes of a version: its diagnostics (published; their fixes without edits),
# the same with each fix's and noqa comment's edits (for code actions), its fix-all text.
CHECK, ACTIONS, FIX = "check", "actions", "fix"
NOTEBOOK = "notebook"  # a notebook's check (its cells' diagnostics)
FAILED = "cudalint failed on this file"
# The cyclic garbage collector's thresholds once the server has loaded its rules (the default
# is 700, 10, 10): see _settle_memory.
GC_THRESHOLDS = (20_000, 20, 20)
# The name the rehearsal's buffer is checked under (no file is read or written).
REHEARSED = "cudalint-rehearsal.py"


class Linter:
    def __init__(self, server: LanguageServer, debounce: float) -> None:
        self.server = server
        self.debounce = debounce
        self.projects = checker.Projects()
        self.scheduler = Scheduler()
        self._diagnostics: Results[Diagnostics] = Results()
        self._actionable: Results[Actionable] = Results()
        self._action_rows: dict[str, tuple[int | None, Rows | None]] = {}  # asked, by version
        self._fixed: Results[checker.FixedBuffer | None] = Results()
        # Whether the client creates files in a workspace edit (fix-all then writes the
        # project's helper as `cudalint check --fix` does): set from its capabilities.
        self.creates_files = False
        # Each open document's unit findings and published diagnostics: the worker's only.
        self._units: dict[str, UnitCache] = {}
        self._published: dict[str, Published] = {}
        self._asked: dict[tuple[str, str], tuple[int | None, int]] = {}
        self._edited: dict[str, float] = {}  # when each document last changed (monotonic)
        self._generation = 0
        self._cells: dict[str, set[str]] = {}  # each notebook's cells published (loop only)
        self._shown: dict[str, int | None] = {}  # the version each failure was shown for
        self._workers = 0  # numbers the worker's one-off tasks
        # The server's opening's check of the first document, until the worker adopts it,
        # and what the opening published of it, until the loop publishes that document.
        self._first: FirstCheck | None = None
        self._settled = False  # whether the memory loaded by now is settled (settle_memory)
        self._sent: tuple[str, int | None, list[Form]] | None = None
        self._arrived: dict[tuple[str, int | None], float] = {}  # (uri, version): came when

    def adopt(self, opening: Opening, arrived: dict[tuple[str, int | None], float]) -> None:
        """Take over from the server's opening (lsp/opening.py): the configurations it
        loaded, its check of the first document, for the same snapshot of it, and when the
        document versions pygls has yet to read came (`changed` dates them so)."""
        self._arrived = arrived
        if opening.projects is not None:
            self.projects = opening.projects
        self._first = first = opening.first
        if first is not None:
            self._sent = first.snapshot.uri, first.snapshot.version, first.published

    # --- on the event loop --------------------------------------------------------------
    def changed(self, uri: str, delay: float = 0.0) -> None:
        """Publish the diagnostics of the document's current version, checked after `delay`
        (the debounce) unless that version's are known. The debounce holds a change back
        only while the document is busy: a change to a document still for `delay`, or whose
        last check is over (none waits or runs), is checked at once; a change that comes while
        a check of the document waits or runs waits until the document has been still that
        long (a check under way is never interrupted, and a waiting one is replaced: a burst
        faster than the checks costs two of them)."""
        document = self.server.workspace.get_text_document(uri)
        now = self._arrived.pop((uri, document.version), None) or time.monotonic()
        if now - self._edited.get(uri, -delay) >= delay or (CHECK, uri) not in self._asked:
            delay = 0.0
        self._edited[uri] = now
        for results in (self._diagnostics, self._actionable, self._fixed):
            results.supersede(uri, document.version)
        for what in (ACTIONS, FIX):  # actions for a version nobody waits for
            if self._asked.get((what, uri), (document.version,))[0] != document.version:
                self.scheduler.cancel((what, uri))
                del self._asked[what, uri]
        known = self._diagnostics.get(uri, document.version)
        if known is not None:
            self._publish(uri, document.version, known[0])
            return
        self._ask(CHECK, self._snapshot(document), delay)

    def changed_all(self) -> None:
        # each document's own URI: the workspace's keys are unquoted (pygls), and a client
        # knows a document only by the URI it sent (`Mes%20projets`)
        workspace = self.server.workspace
        for document in list(workspace.text_documents.values()):
            if workspace.get_notebook_document(cell_uri=document.uri) is None:
                self.changed(document.uri)
        for notebook in list(workspace.notebook_documents.values()):
            self.notebook_changed(notebook.uri)

    async def diagnostics(self, document: TextDocument) -> Diagnostics | None:
        """The diagnostics of the document's current version; None when a newer version came
        while they were being made."""
        found = await self._result(CHECK, self._diagnostics, document)
        return None if found is None else found[0]

    async def actionable(self, document: TextDocument, rows: Rows | None = None,
                         ) -> Diagnostics | None:
        """The diagnostics on `rows` (None: all) of the document's current version with the
        edits of their actions, from a check of that version that reads the units holding
        those rows; None when a newer version came meanwhile. A request asks for the rows of
        the previous ones too, so a check it replaces is never missed."""
        uri, version = document.uri, document.version
        for _ in range(_TRIES):
            known = self._actionable.get(uri, version)
            if known is not None and _covers(known[0][0], rows):
                return known[0][1]
            wanted = _union(rows, known[0][0] if known else frozenset())
            asked = self._action_rows.get(uri)
            if asked is not None and asked[0] == version:
                wanted = _union(wanted, asked[1])
            self._action_rows[uri] = (version, wanted)
            waiting = self._actionable.wait(uri, version)
            self._ask(ACTIONS, replace(self._snapshot(document), rows=wanted), 0.0)
            found = await waiting
            if found is None:
                return None
            if _covers(found[0][0], rows):
                return found[0][1]
        return None

    async def fixed_text(self, document: TextDocument,
                         ) -> tuple[checker.FixedBuffer | None] | None:
        """`(fixed,)`: the current version with every safe fix applied (None: nothing to
        fix); None when a newer version came meanwhile."""
        return await self._result(FIX, self._fixed, document)

    # --- notebooks, on the event loop ------------------------------------------------------
    def notebook_changed(self, uri: str, delay: float = 0.0) -> None:
        """Check the notebook's current version (after `delay`, debounced as `changed` is)
        and publish its cells' diagnostics."""
        notebook = self.server.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return
        now = time.monotonic()
        if now - self._edited.get(uri, -delay) >= delay:
            delay = 0.0
        self._edited[uri] = now
        snapshot = self._notebook_snapshot(notebook)
        loop = asyncio.get_running_loop()

        def task() -> None:
            result = self._diagnose_notebook(snapshot)
            loop.call_soon_threadsafe(self._deliver_notebook, snapshot, result)

        self.scheduler.submit((NOTEBOOK, uri), task, delay)

    def notebook_closed(self, uri: str, cells: list[str]) -> None:
        self.scheduler.cancel((NOTEBOOK, uri))
        self._edited.pop(uri, None)
        self._shown.pop(uri, None)
        for cell in sorted(self._cells.pop(uri, set()) | set(cells)):
            self._publish(cell, None, [])

    def notebook_snapshot(self, cell_uri: str) -> notebooks.NotebookSnapshot | None:
        """The current version of the notebook holding the cell, None for another document."""
        notebook = self.server.workspace.get_notebook_document(cell_uri=cell_uri)
        return None if notebook is None else self._notebook_snapshot(notebook)

    async def notebook_actions(self, snapshot: notebooks.NotebookSnapshot,
                               ) -> dict[str, Diagnostics]:
        """Each cell's diagnostics with their actions' edits."""
        return await self.on_worker(lambda: self._notebook_findings(snapshot, actions=True))

    async def notebook_fixed(self, snapshot: notebooks.NotebookSnapshot,
                             ) -> dict[int, str] | None:
        return await self.on_worker(lambda: self._fix_notebook(snapshot))

    async def on_worker(self, work: Callable[[], T]) -> T:
        """`work()`, run on the worker thread (after the checks due before it)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def task() -> None:
            try:
                result = work()
            except BaseException as error:
                loop.call_soon_threadsafe(_settle, future, None, error)
                raise
            loop.call_soon_threadsafe(_settle, future, result, None)

        self._workers += 1
        self.scheduler.submit(("once", self._workers), task)
        return await future

    def _notebook_snapshot(self, notebook: types.NotebookDocument) -> notebooks.NotebookSnapshot:
        fs_path = to_fs_path(notebook.uri)
        if fs_path is None:  # an unsaved notebook: checked as a notebook of the workspace
            fs_path = str(Path(self.server.workspace.root_path or ".", "Untitled.ipynb"))
        metadata: dict[str, Any] = notebook.metadata if isinstance(notebook.metadata, dict) \
            else {}
        return notebooks.NotebookSnapshot(
            uri=notebook.uri, version=notebook.version, path=Path(fs_path).absolute(),
            cells=notebooks.cells_of(notebook, self.server.workspace.text_documents),
            metadata=dict(metadata), roots=self._roots(), encoding=self.encoding,
            generation=self._generation)

    def _deliver_notebook(self, snapshot: notebooks.NotebookSnapshot,
                          by_cell: dict[str, Diagnostics]) -> None:
        notebook = self.server.workspace.get_notebook_document(notebook_uri=snapshot.uri)
        if (notebook is None or notebook.version != snapshot.version
                or snapshot.generation != self._generation):
            return  # closed, changed or reconfigured meanwhile: that re-checks
        for gone in sorted(self._cells.get(snapshot.uri, set()) - by_cell.keys()):
            self._publish(gone, None, [])  # a cell deleted since
        self._cells[snapshot.uri] = set(by_cell)
        for cell in snapshot.cells:
            found = by_cell.get(cell.uri, [])
            self._show_failure(snapshot.uri, snapshot.version, found)
            self._publish(cell.uri, cell.version, found)

    def _show_failure(self, uri: str, version: int | None, diagnostics: Diagnostics) -> None:
        """Say once per version of a document that cudalint failed on it."""
        failure = next((d for d in diagnostics if is_failure(d)), None)
        if failure is None or self._shown.get(uri, object()) == version:
            return
        self._shown[uri] = version
        self.server.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Error, message=failure.message))

    def forget(self, uri: str) -> None:
        for results in (self._diagnostics, self._actionable, self._fixed):
            results.forget(uri)

    def close(self, uri: str) -> None:
        self.forget(uri)
        self._units.pop(uri, None)
        self._published.pop(uri, Published()).forget()
        self._edited.pop(uri, None)
        self._action_rows.pop(uri, None)
        self._shown.pop(uri, None)

    def reset(self) -> None:
        """The configuration changed: forget it and every result made under it."""
        self._generation += 1
        self.projects.clear()
        for results in (self._diagnostics, self._actionable, self._fixed):
            results.clear()
        self._units.clear()
        for published in self._published.values():
            published.forget()
        self._published.clear()
        self._asked.clear()
        self._action_rows.clear()

    def stop(self) -> None:
        self.scheduler.stop()

    def warm_up(self) -> None:
        """Load the rules and the workspace's configuration now, and check a short script
        with them, while the editor waits for `initialize`, rather than in the first
        document's check."""
        roots = self._roots()
        if roots and self._first is None:  # else the opening has checked a document
            with contextlib.suppress(ConfigError):  # each document's check reports it
                project = self.projects.for_path(roots[0] / "__init__.py", roots)
                self._rehearse(project, roots[0])
        _settle_memory(collect=not self._settled)

    def settle_memory(self) -> None:
        """What is loaded by now lives as long as the server (`_settle_memory`); once it is
        settled, `warm_up` only freezes what came since (the opening's check, handed over:
        lsp/handover.py), without a collection that would scan it on the way to the first
        code action."""
        _settle_memory()
        self._settled = True

    def _rehearse(self, project: checker.Project, root: Path) -> None:
        """Check `rehearsal.SCRIPT` as a buffer of `root` and drop what it found."""
        path, text = root / REHEARSED, rehearsal.SCRIPT
        try:
            findings = checker.check_python_text(path, text, project,
                                                 UnitCache(checker.fix_names()))
            published = Published()
            published.diagnostics(findings, Noqa(text, FileKind.PYTHON), self.encoding, None)
            published.forget()
        except Exception:  # a rule's bug shows in the documents' checks, not in initialize
            logger.exception("checking %s before the first document failed", REHEARSED)

    @property
    def encoding(self) -> str:
        encoding = self.server.workspace.position_encoding or types.PositionEncodingKind.Utf16
        return str(getattr(encoding, "value", encoding))

    async def _result(self, what: str, results: Results[T], document: TextDocument,
                      ) -> tuple[T] | None:
        known = results.get(document.uri, document.version)
        if known is not None:
            return known
        waiting = results.wait(document.uri, document.version)
        key = (what, document.uri)
        if self._asked.get(key) != (document.version, self._generation):
            self._ask(what, self._snapshot(document), 0.0)
        else:  # asked for already: skip the debounce; when it runs, its result is near
            self.scheduler.hurry(key)
        return await waiting

    def _ask(self, what: str, snapshot: Snapshot, delay: float) -> None:
        loop = asyncio.get_running_loop()
        work: Callable[[Snapshot], object] = {
            CHECK: self._diagnose, ACTIONS: self._diagnose_fully, FIX: self._fix}[what]

        def task() -> None:
            result = work(snapshot)
            loop.call_soon_threadsafe(self._deliver, what, snapshot, result)

        self._asked[what, snapshot.uri] = (snapshot.version, snapshot.generation)
        self.scheduler.submit((what, snapshot.uri), task, delay)

    def _deliver(self, what: str, snapshot: Snapshot, result: object) -> None:
        uri, version = snapshot.uri, snapshot.version
        if snapshot.generation != self._generation:
            return  # made under a configuration since replaced, which re-checks
        if self._asked.get((what, uri)) == (version, snapshot.generation):
            del self._asked[what, uri]
        if not is_open(self.server.workspace, uri):
            return  # closed meanwhile
        if what == FIX:
            fixed = result if isinstance(result, checker.FixedBuffer) else None
            self._fixed.put(uri, version, fixed)
            return
        diagnostics: Diagnostics = result if isinstance(result, list) else []
        if what == ACTIONS:
            self._actionable.put(uri, version, (snapshot.rows, diagnostics))
            return
        self._diagnostics.put(uri, version, diagnostics)
        if self.server.workspace.get_text_document(uri).version == version:
            self._show_failure(uri, version, diagnostics)
            self._publish(uri, version, diagnostics)

    def _publish(self, uri: str, version: int | None, diagnostics: Diagnostics) -> None:
        sent = self._sent
        if sent is not None and sent[0] == uri:
            self._sent = None
            if sent[1:] == (version, [form_of(d) for d in diagnostics]):
                return  # the server's opening has published them
        self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=diagnostics, version=version))

    def _snapshot(self, document: TextDocument) -> Snapshot:
        fs_path = to_fs_path(document.uri)
        if fs_path is None:  # an unsaved buffer: checked as a file of the workspace
            fs_path = str(Path(self.server.workspace.root_path or ".", document.filename or ""))
        path = Path(fs_path).absolute()
        kind = checker.document_kind(path, document.language_id)
        return Snapshot(
            uri=document.uri, version=document.version, text=document.source, path=path,
            kind=None if kind in checker.UNCHECKED else kind, roots=self._roots(),
            encoding=self.encoding, generation=self._generation,
        )

    def _roots(self) -> tuple[Path, ...]:
        folders = [to_fs_path(f.uri) for f in self.server.workspace.folders.values()]
        roots = [*folders, self.server.workspace.root_path]
        return tuple(Path(root).absolute() for root in roots if root)

    # --- on the worker thread -----------------------------------------------------------
    def _diagnose(self, snapshot: Snapshot, actions: bool = False) -> Diagnostics:
        try:
            return self._diagnostics_of(snapshot, actions)
        except Exception as error:  # a rule's bug must not take the server down
            logger.exception("checking %s failed", snapshot.uri)
            return [failure_diagnostic(error, snapshot.version)]

    def _diagnose_fully(self, snapshot: Snapshot) -> Diagnostics:
        return self._diagnose(snapshot, actions=True)

    def _diagnostics_of(self, snapshot: Snapshot, actions: bool) -> Diagnostics:
        path, kind = snapshot.path, snapshot.kind
        if kind is None:
            return []
        try:
            project = self.projects.for_path(path, snapshot.roots)
        except ConfigError as error:
            return [message_diagnostic(f"cudalint: {error}")]
        if project.excludes(path, kind):
            return []
        skipped = checker.too_large([snapshot.text], project)
        if skipped is not None:  # not parsed: minutes of CPU for a 14 MB buffer
            return [message_diagnostic(f"cudalint: {skipped}")]
        adopted = None if actions or kind is not FileKind.PYTHON else self._adopt(snapshot)
        if adopted is not None:
            findings = adopted
        elif kind is FileKind.PYTHON and not (actions and snapshot.rows is None):
            units = self._units.setdefault(snapshot.uri, UnitCache(checker.fix_names()))
            findings = (checker.check_python_rows(path, snapshot.text, project, units,
                                                  snapshot.rows) if snapshot.rows is not None
                        else checker.check_python_text(path, snapshot.text, project, units))
        else:
            findings = checker.check_text(path, kind, snapshot.text, project, edits=actions)
        if not actions:
            published = self._published.setdefault(snapshot.uri, Published())
            return published.diagnostics(findings, Noqa(snapshot.text, kind), snapshot.encoding,
                                         snapshot.version)
        noqa = Noqa(snapshot.text, kind, self._statements(snapshot))
        return [to_diagnostic(finding, noqa, snapshot.encoding, snapshot.version)
                for finding in findings]

    def _adopt(self, snapshot: Snapshot) -> list[Finding] | None:
        """The findings of the opening's check when it checked this snapshot (its unit cache
        kept for the document when it checked another version of it)."""
        first = self._first
        if first is None or first.snapshot.uri != snapshot.uri:
            return None
        self._first = None
        if replace(first.snapshot, text=snapshot.text, version=snapshot.version) != snapshot:
            logger.warning("the server's opening took %s as %s, the linter as %s",
                           snapshot.uri, replace(first.snapshot, text="..."),
                           replace(snapshot, text="..."))
            return None
        self._units.setdefault(snapshot.uri, first.units)
        return first.findings if first.snapshot == snapshot else None

    def _statements(self, snapshot: Snapshot) -> list[tuple[int, int]] | None:
        """The rows of each top-level statement of a Python document, from its tree."""
        units = self._units.get(snapshot.uri)
        if units is None or snapshot.kind is not FileKind.PYTHON:
            return None
        return units.reparser.statements(checker.encode(snapshot.text).removeprefix(BOM))

    def _diagnose_notebook(self, snapshot: notebooks.NotebookSnapshot,
                           ) -> dict[str, Diagnostics]:
        try:
            return self._notebook_findings(snapshot, actions=False)
        except Exception as error:  # a rule's bug must not take the server down
            logger.exception("checking %s failed", snapshot.uri)
            by_cell: dict[str, Diagnostics] = {cell.uri: [] for cell in snapshot.cells}
            if snapshot.cells:
                first = snapshot.cells[0]
                by_cell[first.uri] = [failure_diagnostic(error, first.version)]
            return by_cell

    def _notebook_findings(self, snapshot: notebooks.NotebookSnapshot, *, actions: bool,
                           ) -> dict[str, Diagnostics]:
        empty: dict[str, Diagnostics] = {cell.uri: [] for cell in snapshot.cells}
        try:
            project = self.projects.for_path(snapshot.path, snapshot.roots)
        except ConfigError as error:
            if snapshot.cells:
                empty[snapshot.cells[0].uri] = [message_diagnostic(f"cudalint: {error}")]
            return empty
        if project.excludes(snapshot.path, FileKind.NOTEBOOK):
            return empty
        skipped = checker.too_large([cell.text for cell in snapshot.cells], project)
        if skipped is not None:
            if snapshot.cells:
                empty[snapshot.cells[0].uri] = [message_diagnostic(f"cudalint: {skipped}")]
            return empty
        found = notebooks.findings(snapshot, project, edits=actions)
        return notebooks.diagnostics(snapshot, found, actions=actions)

    def _fix_notebook(self, snapshot: notebooks.NotebookSnapshot) -> dict[int, str] | None:
        try:
            project = self.projects.for_path(snapshot.path, snapshot.roots)
            if checker.too_large([cell.text for cell in snapshot.cells], project):
                return None
            return notebooks.fixed_cells(snapshot, project)
        except ConfigError:
            return None
        except Exception:  # a rule's bug costs fix-all, not the other actions
            logger.exception("fixing %s failed", snapshot.uri)
            return None

    def _fix(self, snapshot: Snapshot) -> checker.FixedBuffer | None:
        if snapshot.kind is not FileKind.PYTHON:
            return None
        try:
            project = self.projects.for_path(snapshot.path, snapshot.roots)
            if checker.too_large([snapshot.text], project):
                return None
            return checker.fix_text(snapshot.path, snapshot.text, project,
                                    create_helper=self.creates_files)
        except ConfigError:
            return None
        except Exception:  # a rule's bug costs fix-all, not the other actions
            logger.exception("fixing %s failed", snapshot.uri)
            return None


def failure_diagnostic(error: Exception, version: int | None) -> types.Diagnostic:
    """An internal error of the check of one version, at the top of the document."""
    diagnostic = message_diagnostic(f"{FAILED}: {type(error).__name__}: {error}")
    diagnostic.data = {"version": version, "failure": True}
    return diagnostic


def is_failure(diagnostic: types.Diagnostic) -> bool:
    return isinstance(diagnostic.data, dict) and diagnostic.data.get("failure") is True


def _settle(future: asyncio.Future[T], result: T | None, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)  # type: ignore[arg-type]


def _settle_memory(*, collect: bool = True) -> None:
    """What is loaded by now (the rules, their tables) lives as long as the server: the cyclic
    garbage collector stops scanning it, and runs less often. A check makes hundreds of
    thousands of short-lived objects (syntax trees without cycles, freed by reference
    counting); with the default thresholds their collection took a quarter of an edit's check."""
    if collect:
        gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


_TRIES = 3  # requests for other rows of the same version can replace a check three times


def _covers(known: Rows | None, rows: Rows | None) -> bool:
    return known is None or (rows is not None and rows <= known)


def _union(first: Rows | None, second: Rows | None) -> Rows | None:
    return None if first is None or second is None else first | second


def is_open(workspace: Workspace, uri: str) -> bool:
    """Whether the client has `uri` open. pygls keys its documents by the unquoted URI, so a
    path with a space or an accent (`file:///home/me/Mes%20projets/x.py`) is looked up as
    pygls stored it."""
    return unquote(uri) in workspace.text_documents

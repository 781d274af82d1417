"""The pygls server: document sync, diagnostics, code actions."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from cudalint import __version__
from cudalint.lsp import actions, checker, lifetime, notebooks, published
from cudalint.lsp.checker import FixedBuffer
from cudalint.lsp.diagnostics import SOURCE, data_version
from cudalint.lsp.lines import split_lines
from cudalint.lsp.linter import Linter, is_open
from cudalint.lsp.positions import end_of, overlaps

logger = logging.getLogger(__name__)


class Protocol(LanguageServerProtocol):
    """pygls's protocol, but a request whose params do not fit its method is answered with a
    JSON-RPC error (InvalidParams): pygls logs it and answers nothing, and the client waits
    for that answer forever."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            ident = data.get("id")
            if "method" in data and isinstance(ident, (int, str)) and not isinstance(ident, bool):
                self._send_response(ident, None, error.to_response_error())
            raise  # pygls's loop logs it and reads the next message

    def handle_message(self, message: Any) -> None:
        """A request after `shutdown` is answered with InvalidRequest, as LSP asks (pygls
        drops it, unanswered)."""
        ident = getattr(message, "id", None)
        if (self._shutdown and ident is not None
                and getattr(message, "method", types.EXIT) != types.EXIT):
            self._send_response(ident, None, JsonRpcInvalidRequest(
                "the server is shutting down").to_response_error())
            return
        super().handle_message(message)


class Server(LanguageServer):
    """The language server and its linter; `clean_exit` after `shutdown`, as LSP asks."""

    def __init__(self, debounce: float) -> None:
        super().__init__("cudalint", __version__, converter_factory=published.converter,
                         notebook_document_sync=notebooks.SYNC, protocol_cls=Protocol)
        self.linter = Linter(self, debounce)
        self.clean_exit = False


def create_server(debounce: float) -> Server:
    """The server; a changed document is re-checked once it has been still `debounce` s."""
    server = Server(debounce)
    _lifecycle(server)
    _document_sync(server, server.linter)
    _notebook_sync(server, server.linter)
    _code_actions(server, server.linter)
    return server


# What an editor and the server say in the first moments: pygls's converter (cattrs) writes
# the code that reads or writes a message type the first time it meets one, a fifth of a
# second for these together, which `prepare` spends before the first of them comes.
EARLY = (types.INITIALIZE, types.INITIALIZED, types.TEXT_DOCUMENT_DID_OPEN,
         types.TEXT_DOCUMENT_DID_CHANGE, types.TEXT_DOCUMENT_CODE_ACTION,
         types.CODE_ACTION_RESOLVE, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)


def prepare(server: Server) -> Server:
    """Make ready now what the first messages would make (lsp/handover.py calls it while
    the opening checks the first document in its child): the converter's code for the
    early messages, and the collector's settled memory (`Linter.settle_memory`)."""
    protocol = server.protocol
    converter = protocol._converter  # pygls names no other way to it
    for method in EARLY:
        for kind in (protocol.get_message_type(method), protocol.get_result_type(method)):
            if isinstance(kind, type):
                converter.get_structure_hook(kind)
                converter.get_unstructure_hook(kind)
    server.linter.settle_memory()
    return server


def _lifecycle(server: Server) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        if params.process_id is not None:
            lifetime.watch(params.process_id, lifetime.leave)
        server.linter.warm_up()

    @server.feature(types.SHUTDOWN)
    def shutdown(params: None) -> None:
        server.linter.stop()
        server.clean_exit = True


def _tell_if_projectless(server: LanguageServer, path: Path, told: set[Path]) -> None:
    """Say once per folder that a document lies in no project (no pyproject.toml, setup.py
    or .git above it): its project facts are then the workspace's, and the findings that
    depend on them may differ from a check run elsewhere."""
    folder = path.parent
    if folder in told or not checker.outside_any_project(folder):
        return
    told.add(folder)
    server.window_log_message(types.LogMessageParams(
        type=types.MessageType.Info,
        message=f"cudalint: {folder} lies in no project (no pyproject.toml, setup.py or .git "
                "above it): its own packages, extensions and torch floor are read from the "
                "workspace folder"))


def _document_sync(server: LanguageServer, linter: Linter) -> None:
    told: set[Path] = set()  # the folders in no project said so

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        why = unmapped(uri)
        if why is not None:
            server.window_log_message(types.LogMessageParams(
                type=types.MessageType.Warning, message=f"cudalint: {why}"))
        else:
            _tell_if_projectless(server, Path(to_fs_path(uri) or uri), told)
        linter.forget(uri)
        linter.changed(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        linter.changed(params.text_document.uri, linter.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = Path(to_fs_path(uri) or uri)
        if path.name in checker.PROJECT_FILES or (
                path.suffix == ".py" and linter.projects.facts_changed(path)):
            linter.reset()
            linter.changed_all()
            return
        linter.forget(uri)
        linter.changed(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        linter.close(uri)
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.INITIALIZED)
    def initialized(params: types.InitializedParams) -> None:
        if _watches_files(server):
            server.client_register_capability(types.RegistrationParams(registrations=[
                types.Registration(
                    id="cudalint-project-files",
                    method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[
                        types.FileSystemWatcher(glob_pattern=f"**/{name}")
                        for name in sorted(checker.PROJECT_FILES)
                    ]),
                )
            ]))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files_changed(params: types.DidChangeWatchedFilesParams) -> None:
        if any(Path(to_fs_path(c.uri) or c.uri).name in checker.PROJECT_FILES
               for c in params.changes):
            linter.reset()
            linter.changed_all()


def _notebook_sync(server: LanguageServer, linter: Linter) -> None:
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenNotebookDocumentParams) -> None:
        linter.notebook_changed(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeNotebookDocumentParams) -> None:
        linter.notebook_changed(params.notebook_document.uri, linter.debounce)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveNotebookDocumentParams) -> None:
        linter.notebook_changed(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseNotebookDocumentParams) -> None:
        linter.notebook_closed(params.notebook_document.uri,
                               [cell.uri for cell in params.cell_text_documents])


async def _cell_actions(server: LanguageServer, linter: Linter, params: types.CodeActionParams,
                        snapshot: notebooks.NotebookSnapshot) -> list[types.CodeAction]:
    """A notebook cell's actions: its findings' quick fixes, and fix-all of every cell."""
    uri, only = params.text_document.uri, params.context.only
    cell = next((c for c in snapshot.cells if unquote(c.uri) == unquote(uri)), None)
    if cell is None:
        return []
    by_cell = await linter.notebook_actions(snapshot)
    if _notebook_version(server, snapshot.uri) != snapshot.version:
        return []
    found: list[types.CodeAction] = []
    target = actions.Target(cell.uri, cell.version, _document_changes(server))
    if actions.wanted(types.CodeActionKind.QuickFix, only):
        found = [action for d in _asked(params, by_cell.get(cell.uri, []), cell.version)
                 for action in actions.quick_fixes(d, target)]
    everything = [d for made in by_cell.values() for d in made]
    if actions.wanted(actions.FIX_ALL, only) and any(map(actions.has_safe_fix, everything)):
        changed = await linter.notebook_fixed(snapshot)
        if _notebook_version(server, snapshot.uri) != snapshot.version:
            return []
        if changed:
            found.append(types.CodeAction(
                title=actions.FIX_ALL_TITLE, kind=actions.FIX_ALL,
                edit=notebooks.fix_all_edit(snapshot, changed, _document_changes(server))))
    return [a for a in actions.deduplicated(found) if actions.wanted(a.kind or "", only)]


def _notebook_version(server: LanguageServer, uri: str) -> int | None:
    notebook = server.workspace.get_notebook_document(notebook_uri=uri)
    return None if notebook is None else notebook.version


def _code_actions(server: LanguageServer, linter: Linter) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=list(actions.KINDS),
                                            resolve_provider=True))
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        """The actions of the document's current version, from that version's diagnostics and
        fixes; none when the document changes while they are made (they would be wrong)."""
        uri = params.text_document.uri
        if not is_open(server.workspace, uri):
            return []  # cudalint's actions are for the documents it checks: open ones
        notebook = linter.notebook_snapshot(uri)
        if notebook is not None:
            return await _cell_actions(server, linter, params, notebook)
        version = server.workspace.get_text_document(uri).version
        diagnostics = await linter.diagnostics(server.workspace.get_text_document(uri))
        document = server.workspace.get_text_document(uri)
        if diagnostics is None or document.version != version:
            return []
        target = actions.Target(uri, version, _document_changes(server))
        linter.creates_files = target.document_changes and _creates_files(server)
        only = params.context.only
        found: list[types.CodeAction] = []
        asked = _asked(params, diagnostics, version)
        if actions.wanted(types.CodeActionKind.QuickFix, only) and asked:
            # The published diagnostics hold no edits: a check of the units holding the
            # asked-about rows of this version makes them.
            rows = _rows([params.range, *(d.range for d in asked)])
            actionable = await linter.actionable(document, rows)
            if actionable is None or document.version != version:
                return []
            found = [action for d in _asked(params, actionable, version)
                     for action in actions.quick_fixes(d, target)]
        if actions.wanted(actions.FIX_ALL, only) and any(map(actions.has_safe_fix, diagnostics)):
            if _resolves_edits(server):  # the whole file's fixes, once the user picks it
                found.append(actions.fix_all_unresolved(target))
            else:
                fixed = await linter.fixed_text(document)
                if fixed is None or document.version != version:
                    return []
                found.extend(_fix_all(fixed[0], document.source, linter.encoding, target))
        return [a for a in actions.deduplicated(found) if actions.wanted(a.kind or "", only)]

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def resolve(action: types.CodeAction) -> types.CodeAction:
        """Fix-all's edit, for the version it was offered for (none once the document has
        changed: the client then applies nothing)."""
        uri, version = actions.unresolved(action)
        if uri is None or not is_open(server.workspace, uri):
            return action
        document = server.workspace.get_text_document(uri)
        if document.version != version:
            return action
        fixed = await linter.fixed_text(document)
        if fixed is None or document.version != version:
            return action
        target = actions.Target(uri, version, _document_changes(server))
        for made in _fix_all(fixed[0], document.source, linter.encoding, target):
            action.edit = made.edit
        return action


def unmapped(uri: str) -> str | None:
    """Why the server cannot map `uri` to a file path (None: it can, or it is an untitled
    buffer, which has no path to map)."""
    scheme = uri.partition(":")[0].lower()
    if scheme == "untitled":
        return None
    if scheme != "file":
        return (f"{uri} is not a file (its scheme is {scheme!r}, not 'file'): it is checked "
                "as an unsaved buffer of the workspace, with the workspace's configuration")
    if to_fs_path(uri) is None:
        return f"{uri} names no file path: it is checked as an unsaved buffer of the workspace"
    return None


def _asked(params: types.CodeActionParams, diagnostics: list[types.Diagnostic],
           version: int | None) -> list[types.Diagnostic]:
    """The diagnostics the request is about: under its range, or sent with it (those of
    another version of the document excepted: their places may have moved)."""
    sent = {(d.code, _range_key(d.range)) for d in params.context.diagnostics
            if d.source == SOURCE and data_version(d) in (None, version)}
    return [d for d in diagnostics
            if overlaps(d.range, params.range) or (d.code, _range_key(d.range)) in sent]


def _fix_all(fixed: FixedBuffer | None, text: str, encoding: str, target: actions.Target,
             ) -> list[types.CodeAction]:
    if fixed is None:
        return []
    edit = types.TextEdit(range=_whole(text, encoding), new_text=fixed.text)
    helper = fixed.helper
    if helper is None:
        return [actions.fix_all(edit, target)]
    replaced = types.TextEdit(range=_whole(helper.before or "", encoding), new_text=helper.after)
    return [actions.fix_all(edit, target, helper.path.as_uri(), replaced,
                            create=helper.before is None)]


def _whole(text: str, encoding: str) -> types.Range:
    return types.Range(start=types.Position(line=0, character=0),
                       end=end_of(split_lines(text), encoding))


def _rows(ranges: list[types.Range]) -> frozenset[int]:
    """The 1-based rows the ranges touch."""
    return frozenset(row for where in ranges
                     for row in range(where.start.line + 1, where.end.line + 2))


def _resolves_edits(server: LanguageServer) -> bool:
    """Whether the client asks for an action's edit when the user picks it (codeAction/resolve)."""
    document = server.client_capabilities.text_document
    action = document.code_action if document else None
    support = action.resolve_support if action else None
    return bool(support and "edit" in support.properties and action and action.data_support)


def _watches_files(server: LanguageServer) -> bool:
    workspace = server.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace else None
    return bool(watched and watched.dynamic_registration)


def _creates_files(server: LanguageServer) -> bool:
    """Whether the client's workspace edits may create a file (resource operations)."""
    workspace = server.client_capabilities.workspace
    edit = workspace.workspace_edit if workspace else None
    operations = edit.resource_operations if edit else None
    return bool(operations and types.ResourceOperationKind.Create in operations)


def _document_changes(server: LanguageServer) -> bool:
    workspace = server.client_capabilities.workspace
    edit = workspace.workspace_edit if workspace else None
    return bool(edit and edit.document_changes)


def _range_key(where: types.Range) -> tuple[int, int, int, int]:
    return where.start.line, where.start.character, where.end.line, where.end.character

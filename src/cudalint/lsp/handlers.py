"""The pygls server: document sync, diagnostics, code actions."""

from __future__ import annotations

import logging
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from cudalint import __version__
from cudalint.config import ConfigError
from cudalint.kinds import FileKind
from cudalint.lsp import actions, checker
from cudalint.lsp.diagnostics import message_diagnostic, to_diagnostic
from cudalint.lsp.positions import end_of, overlaps, split_lines

logger = logging.getLogger(__name__)


class Linter:
    """The diagnostics and fixed text of each open document, cached per version."""

    def __init__(self, server: LanguageServer) -> None:
        self.server = server
        self.projects = checker.Projects()
        self._diagnostics: dict[str, tuple[int | None, list[types.Diagnostic]]] = {}
        self._fixed: dict[str, tuple[int | None, str | None]] = {}

    @property
    def encoding(self) -> str:
        encoding = self.server.workspace.position_encoding or types.PositionEncodingKind.Utf16
        return str(getattr(encoding, "value", encoding))

    def publish(self, uri: str) -> None:
        document = self.server.workspace.get_text_document(uri)
        self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=self.diagnostics(document), version=document.version,
        ))

    def publish_all(self) -> None:
        for document in list(self.server.workspace.text_documents.values()):
            self.publish(document.uri)

    def forget(self, uri: str) -> None:
        self._diagnostics.pop(uri, None)
        self._fixed.pop(uri, None)

    def reset(self) -> None:
        self.projects.clear()
        self._diagnostics.clear()
        self._fixed.clear()

    def diagnostics(self, document: TextDocument) -> list[types.Diagnostic]:
        cached = self._diagnostics.get(document.uri)
        if cached is not None and document.version is not None and cached[0] == document.version:
            return cached[1]
        try:
            found = self._check(document)
        except Exception as error:  # a rule's bug must not take the server down
            logger.exception("checking %s failed", document.uri)
            found = [message_diagnostic(f"cudalint: internal error: {type(error).__name__}: "
                                        f"{error}")]
        self._diagnostics[document.uri] = (document.version, found)
        return found

    def fixed_text(self, document: TextDocument) -> str | None:
        cached = self._fixed.get(document.uri)
        if cached is not None and document.version is not None and cached[0] == document.version:
            return cached[1]
        fixed = None
        where = self._where(document)
        if where is not None and where[1] is FileKind.PYTHON:
            try:
                project = self.projects.for_path(where[0], self._roots())
                fixed = checker.fix_text(where[0], document.source, project)
            except ConfigError:
                fixed = None
            except Exception:  # a rule's bug costs fix-all, not the other actions
                logger.exception("fixing %s failed", document.uri)
                fixed = None
        self._fixed[document.uri] = (document.version, fixed)
        return fixed

    def _check(self, document: TextDocument) -> list[types.Diagnostic]:
        where = self._where(document)
        if where is None:
            return []
        path, kind = where
        try:
            project = self.projects.for_path(path, self._roots())
        except ConfigError as error:
            return [message_diagnostic(f"cudalint: {error}")]
        if checker.is_excluded(path, kind, project.config):
            return []
        text = document.source
        lines = split_lines(text)
        return [to_diagnostic(finding, text, lines, kind, self.encoding)
                for finding in checker.check_text(path, kind, text, project)]

    def _where(self, document: TextDocument) -> tuple[Path, FileKind] | None:
        """The document's path and kind, or None for what cudalint does not check."""
        fs_path = to_fs_path(document.uri)
        if fs_path is None:  # an unsaved buffer: checked as a file of the workspace
            fs_path = str(Path(self.server.workspace.root_path or ".", document.filename or ""))
        path = Path(fs_path).absolute()
        kind = checker.document_kind(path, document.language_id)
        if kind is None or kind in checker.UNCHECKED:
            return None
        return path, kind

    def _roots(self) -> list[Path]:
        folders = [to_fs_path(f.uri) for f in self.server.workspace.folders.values()]
        roots = [*folders, self.server.workspace.root_path]
        return [Path(root).absolute() for root in roots if root]


def create_server() -> LanguageServer:
    server = LanguageServer("cudalint", __version__)
    linter = Linter(server)
    _document_sync(server, linter)
    _code_actions(server, linter)
    return server


def _document_sync(server: LanguageServer, linter: Linter) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        linter.forget(params.text_document.uri)
        linter.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        linter.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if Path(to_fs_path(uri) or uri).name in checker.PROJECT_FILES:
            linter.reset()
            linter.publish_all()
            return
        linter.forget(uri)
        linter.publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        linter.forget(uri)
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
            linter.publish_all()


def _code_actions(server: LanguageServer, linter: Linter) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=list(actions.KINDS)))
    def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        document = server.workspace.get_text_document(params.text_document.uri)
        diagnostics = linter.diagnostics(document)
        asked = {(d.code, _range_key(d.range)) for d in params.context.diagnostics
                 if d.source == "cudalint"}
        target = actions.Target(document.uri, document.version, _document_changes(server))
        found = [
            action
            for d in diagnostics
            if overlaps(d.range, params.range) or (d.code, _range_key(d.range)) in asked
            for action in actions.quick_fixes(d, target)
        ]
        only = params.context.only
        if actions.wanted(actions.FIX_ALL, only) and any(map(actions.has_safe_fix, diagnostics)):
            found.extend(_fix_all(linter, document, target))
        return [a for a in actions.deduplicated(found) if actions.wanted(a.kind or "", only)]


def _fix_all(linter: Linter, document: TextDocument, target: actions.Target,
             ) -> list[types.CodeAction]:
    fixed = linter.fixed_text(document)
    if fixed is None:
        return []
    lines = split_lines(document.source)
    whole = types.Range(start=types.Position(line=0, character=0),
                        end=end_of(lines, linter.encoding))
    return [actions.fix_all(types.TextEdit(range=whole, new_text=fixed), target)]


def _watches_files(server: LanguageServer) -> bool:
    workspace = server.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace else None
    return bool(watched and watched.dynamic_registration)


def _document_changes(server: LanguageServer) -> bool:
    workspace = server.client_capabilities.workspace
    edit = workspace.workspace_edit if workspace else None
    return bool(edit and edit.document_changes)


def _range_key(where: types.Range) -> tuple[int, int, int, int]:
    return where.start.line, where.start.character, where.end.line, where.end.character

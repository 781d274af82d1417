"""Code actions from diagnostics: a finding's fix, its noqa comment, and fix-all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types

from cudalint.lsp.diagnostics import edits_of

FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.cudalint"
KINDS = (types.CodeActionKind.QuickFix, FIX_ALL)


class Target:
    """The document the actions edit: versioned edits when the client takes them, so a stale
    action is refused rather than applied to a changed buffer."""

    def __init__(self, uri: str, version: int | None, document_changes: bool) -> None:
        self.uri = uri
        self.version = version
        self.document_changes = document_changes

    def edit(self, edits: Sequence[types.TextEdit]) -> types.WorkspaceEdit:
        if not self.document_changes:
            return types.WorkspaceEdit(changes={self.uri: list(edits)})
        document = types.OptionalVersionedTextDocumentIdentifier(uri=self.uri,
                                                                 version=self.version)
        return types.WorkspaceEdit(
            document_changes=[types.TextDocumentEdit(text_document=document, edits=list(edits))]
        )


def quick_fixes(diagnostic: types.Diagnostic, target: Target) -> list[types.CodeAction]:
    """The finding's fix (preferred when safe), then "Disable CODE for this line"."""
    data: dict[str, Any] = diagnostic.data if isinstance(diagnostic.data, dict) else {}
    actions = []
    fix = data.get("fix")
    if fix:
        actions.append(types.CodeAction(
            title=fix["title"], kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
            edit=target.edit(edits_of(fix)), is_preferred=fix["applicability"] == "safe",
        ))
    noqa = data.get("noqa")
    if noqa:
        actions.append(types.CodeAction(
            title=noqa["title"], kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
            edit=target.edit(edits_of(noqa)),
        ))
    return actions


def has_safe_fix(diagnostic: types.Diagnostic) -> bool:
    data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
    fix = data.get("fix")
    return isinstance(fix, dict) and fix["applicability"] == "safe"


FIX_ALL_TITLE = "cudalint: fix all safely fixable problems"


def fix_all(edit: types.TextEdit, target: Target, helper_uri: str | None = None,
            helper_edit: types.TextEdit | None = None, *, create: bool = False,
            ) -> types.CodeAction:
    """Fix-all's action; with `helper_uri`, the same change creates (`create`) or extends the
    device helper the fixes import, and the title says so (the client takes document
    changes and file creation: see handlers._creates_files)."""
    if helper_uri is None or helper_edit is None:
        return types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL, edit=target.edit([edit]))
    changes: list[types.TextDocumentEdit | types.CreateFile | types.RenameFile
                  | types.DeleteFile] = []
    if create:
        changes.append(types.CreateFile(uri=helper_uri, options=types.CreateFileOptions(
            overwrite=False, ignore_if_exists=True)))
    helper = types.OptionalVersionedTextDocumentIdentifier(uri=helper_uri, version=None)
    changes.append(types.TextDocumentEdit(text_document=helper, edits=[helper_edit]))
    changes += target.edit([edit]).document_changes or []
    verb = "creates" if create else "extends"
    name = helper_uri.rsplit("/", 1)[-1]
    return types.CodeAction(title=f"{FIX_ALL_TITLE} ({verb} the device helper {name})",
                            kind=FIX_ALL, edit=types.WorkspaceEdit(document_changes=changes))


def fix_all_unresolved(target: Target) -> types.CodeAction:
    """Fix-all without its edit (a fix of the whole file): the client asks for it
    (codeAction/resolve) when the user picks the action."""
    return types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL,
                            data={"uri": target.uri, "version": target.version})


def unresolved(action: types.CodeAction) -> tuple[str | None, int | None]:
    """The document and version of an action `fix_all_unresolved` made; (None, None) for
    another."""
    data = action.data if isinstance(action.data, dict) else {}
    uri, version = data.get("uri"), data.get("version")
    if action.kind != FIX_ALL or not isinstance(uri, str):
        return None, None
    return uri, version if isinstance(version, int) else None


def wanted(kind: str, only: Sequence[str] | None) -> bool:
    """Whether an action of `kind` answers a request for the kinds `only` (hierarchical:
    `source.fixAll` asks for `source.fixAll.cudalint`)."""
    if not only:
        return True
    return any(kind == prefix or kind.startswith(f"{prefix}.") for prefix in only)


def deduplicated(actions: Sequence[types.CodeAction]) -> list[types.CodeAction]:
    """One "Disable CODE for this line" per line: two findings of a code on a line share it."""
    seen: set[str] = set()
    kept = []
    for action in actions:
        key = action.title + repr(action.edit)
        if key in seen:
            continue
        seen.add(key)
        kept.append(action)
    return kept

"""Notebook documents (LSP 3.17): an open notebook's cells, written as the nbformat 4 JSON of a
saved `.ipynb`, are checked by the notebook checker `cudalint check` runs on the file
(cudalint.engine.checkers.notebook), and each finding, placed by its cell and its row in the
cell, is published on that cell's URI. Fix-all runs the checker's fix in memory and edits
each changed cell."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types

from cudalint.engine.running.runner import RunOptions, check_file
from cudalint.finding import Finding
from cudalint.kinds import FileKind
from cudalint.lsp.checker import Project
from cudalint.lsp.diagnostics import to_diagnostic
from cudalint.lsp.lines import split_lines
from cudalint.lsp.positions import end_of
from cudalint.lsp.suppress import Noqa

NOTEBOOK_TYPE = "jupyter-notebook"
SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(
        notebook=NOTEBOOK_TYPE, cells=[types.NotebookCellLanguage(language="python")])],
    save=True,
)
_CHECK = RunOptions()
_WITH_EDITS = RunOptions(want_edits=True)
_FIX = RunOptions(fix=True, in_memory=True)


@dataclass(frozen=True)
class CellSnapshot:
    uri: str
    version: int | None
    code: bool  # a Python code cell (markdown, raw and other languages are not checked)
    text: str


@dataclass(frozen=True)
class NotebookSnapshot:
    """What a check reads of one version of a notebook (taken on the event loop)."""

    uri: str
    version: int
    path: Path
    cells: tuple[CellSnapshot, ...]
    metadata: dict[str, Any]
    roots: tuple[Path, ...]
    encoding: str
    generation: int


def cells_of(notebook: types.NotebookDocument,
             documents: dict[str, Any]) -> tuple[CellSnapshot, ...]:
    """The notebook's cells in order, with their text (`documents`: the workspace's text
    documents, by unquoted URI, as pygls keeps them)."""
    from urllib.parse import unquote

    made = []
    for cell in notebook.cells:
        document = documents.get(unquote(cell.document))
        text = document.source if document is not None else ""
        language = document.language_id if document is not None else "python"
        code = cell.kind == types.NotebookCellKind.Code and language in (None, "python")
        made.append(CellSnapshot(cell.document, getattr(document, "version", None), code, text))
    return tuple(made)


def notebook_json(snapshot: NotebookSnapshot) -> bytes:
    """The notebook as a saved `.ipynb` holds it (nbformat 4)."""
    cells: list[dict[str, Any]] = []
    for cell in snapshot.cells:
        if cell.code:
            cells.append({"cell_type": "code", "execution_count": None, "metadata": {},
                          "outputs": [], "source": cell.text})
        else:
            cells.append({"cell_type": "markdown", "metadata": {}, "source": cell.text})
    metadata = snapshot.metadata if isinstance(snapshot.metadata, dict) else {}
    notebook = {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(notebook, indent=1, ensure_ascii=False).encode()


def findings(snapshot: NotebookSnapshot, found: Project, *, edits: bool = False,
             ) -> list[Finding]:
    """What `cudalint check` finds in the notebook saved as it is in the editor."""
    path = snapshot.path
    settings = found.file_settings(path, FileKind.NOTEBOOK)
    report = check_file(path, FileKind.NOTEBOOK, found.rules_for(path), settings,
                        _WITH_EDITS if edits else _CHECK, data=notebook_json(snapshot))
    return sorted(report.findings, key=lambda f: (f.cell or 0, *Finding.sort_key(f)))


def diagnostics(snapshot: NotebookSnapshot, found: list[Finding], *, actions: bool = False,
                ) -> dict[str, list[types.Diagnostic]]:
    """Each cell's diagnostics, by cell URI (every cell present, most with none). A finding
    of no cell (the notebook could not be checked) goes on the first cell."""
    by_cell: dict[str, list[types.Diagnostic]] = {cell.uri: [] for cell in snapshot.cells}
    if not snapshot.cells:
        return by_cell
    noqas: dict[int, Noqa] = {}
    for finding in found:
        index = (finding.cell or 1) - 1
        if not 0 <= index < len(snapshot.cells):
            index = 0
        cell = snapshot.cells[index]
        noqa = noqas.get(index)
        if noqa is None:
            noqa = noqas[index] = Noqa(cell.text, FileKind.PYTHON)
        by_cell[cell.uri].append(to_diagnostic(finding, noqa, snapshot.encoding, cell.version,
                                               actions=actions))
    return by_cell


def fixed_cells(snapshot: NotebookSnapshot, found: Project) -> dict[int, str] | None:
    """The new text of each cell fix-all changes (0-based index), as `cudalint check --fix`
    writes the notebook; None when nothing changes, or when the fixes need a new cell (a
    client cannot be asked to insert one in a workspace edit)."""
    path = snapshot.path
    settings = found.file_settings(path, FileKind.NOTEBOOK)
    report = check_file(path, FileKind.NOTEBOOK, found.rules_for(path), settings, _FIX,
                        data=notebook_json(snapshot))
    if not report.fixed or report.fixed_data is None:
        return None
    cells = json.loads(report.fixed_data).get("cells", [])
    if len(cells) != len(snapshot.cells):
        return None
    changed = {}
    for index, (cell, before) in enumerate(zip(cells, snapshot.cells, strict=True)):
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        if text != before.text:
            changed[index] = text
    return changed or None


def fix_all_edit(snapshot: NotebookSnapshot, changed: dict[int, str],
                 document_changes: bool) -> types.WorkspaceEdit:
    """One workspace edit replacing each changed cell's text (versioned edits when the client
    takes them, so a stale fix is refused)."""
    edits = {}
    for index, text in changed.items():
        cell = snapshot.cells[index]
        whole = types.Range(start=types.Position(line=0, character=0),
                            end=end_of(split_lines(cell.text), snapshot.encoding))
        edits[cell] = [types.TextEdit(range=whole, new_text=text)]
    if not document_changes:
        return types.WorkspaceEdit(changes={cell.uri: made for cell, made in edits.items()})
    return types.WorkspaceEdit(document_changes=[
        types.TextDocumentEdit(text_document=types.OptionalVersionedTextDocumentIdentifier(
            uri=cell.uri, version=cell.version), edits=made)
        for cell, made in edits.items()])

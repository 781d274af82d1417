"""Notebook documents over LSP 3.17: a notebook's cells are checked as `cudalint check` checks
the saved `.ipynb`, and each finding is published on its cell's URI."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cudalint.runtime.helper import write_helper
from tests.lsp.client import Client, apply_edits

MARKDOWN = "# Training\n\nMoves the model to the GPU.\n"
IMPORTS = "import torch\n"
MOVE = "%matplotlib inline\nx = torch.ones(2).cuda()\n"
CAPABILITIES = {"notebookDocument": {"synchronization": {}},
                "workspace": {"workspaceEdit": {"documentChanges": True}}}
Finding = tuple[str, int, int, int]  # code, 1-based cell, 1-based row and column in the cell


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("notebooks")
    write_helper(folder / "_device.py", force=False)
    return folder


@pytest.fixture(scope="module")
def server(workspace: Path) -> Iterator[Client]:
    with (workspace / "server.log").open("wb") as log:
        client = Client(workspace, log)
        try:
            result = client.initialize(workspace, CAPABILITIES)
            sync = result["capabilities"]["notebookDocumentSync"]
            assert sync["notebookSelector"] == [{"notebook": "jupyter-notebook",
                                                 "cells": [{"language": "python"}]}]
            yield client
        finally:
            client.kill()


class Notebook:
    """An open notebook document of the test server: its cells' URIs, texts and versions."""

    def __init__(self, server: Client, path: Path, cells: list[tuple[str, str]]) -> None:
        self.server, self.path, self.uri = server, path, path.as_uri()
        self.version = 1
        self.kinds = [kind for kind, _ in cells]
        self.texts = [text for _, text in cells]
        self.cells = [f"vscode-notebook-cell:{path.as_posix()}#W{i}sZmlsZQ%3D%3D"
                      for i in range(len(cells))]
        self.versions = [1] * len(cells)
        server.notify("notebookDocument/didOpen", {
            "notebookDocument": {
                "uri": self.uri, "notebookType": "jupyter-notebook", "version": 1,
                "metadata": {},
                "cells": [{"kind": 1 if kind == "markdown" else 2, "document": uri}
                          for (kind, _), uri in zip(cells, self.cells, strict=True)]},
            "cellTextDocuments": [
                {"uri": uri, "languageId": "markdown" if kind == "markdown" else "python",
                 "version": 1, "text": text}
                for (kind, text), uri in zip(cells, self.cells, strict=True)],
        })

    def diagnostics(self, index: int) -> list[dict[str, Any]]:
        return self.server.diagnostics(self.cells[index], self.versions[index])

    def all_diagnostics(self) -> list[list[dict[str, Any]]]:
        return [self.diagnostics(index) for index in range(len(self.cells))]

    def edit(self, index: int, text: str) -> None:
        self.version += 1
        self.versions[index] += 1
        self.texts[index] = text
        self.server.notify("notebookDocument/didChange", {
            "notebookDocument": {"uri": self.uri, "version": self.version},
            "change": {"cells": {"textContent": [{
                "document": {"uri": self.cells[index], "version": self.versions[index]},
                "changes": [{"text": text}]}]}},
        })

    def close(self) -> None:
        self.server.notify("notebookDocument/didClose", {
            "notebookDocument": {"uri": self.uri},
            "cellTextDocuments": [{"uri": uri} for uri in self.cells]})

    def findings(self, diagnostics: list[list[dict[str, Any]]]) -> set[Finding]:
        return {(d["code"], index + 1, d["range"]["start"]["line"] + 1,
                 d["range"]["start"]["character"] + 1)
                for index, found in enumerate(diagnostics) for d in found}

    def saved(self, path: Path) -> Path:
        """The notebook as Jupyter saves it (nbformat 4)."""
        cells: list[dict[str, Any]] = [
            {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True),
             **({"execution_count": None, "outputs": []} if kind == "code" else {})}
            for kind, text in zip(self.kinds, self.texts, strict=True)]
        path.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {
            "display_name": "Python 3", "language": "python", "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n")
        return path


def cli_findings(path: Path) -> set[Finding]:
    """What `cudalint check --output-format json` reports on the saved notebook."""
    done = subprocess.run([sys.executable, "-m", "cudalint", "check", "--no-cache",
                           "--output-format", "json", str(path)],
                          capture_output=True, text=True, cwd=path.parent, check=False)
    return {(f["code"], f["cell"], f["location"]["row"], f["location"]["column"])
            for f in json.loads(done.stdout)}


def cli_fixed(path: Path) -> list[str]:
    """Each cell's text once `cudalint check --fix` has fixed the saved notebook."""
    subprocess.run([sys.executable, "-m", "cudalint", "check", "--no-cache", "--fix",
                    "--quiet", str(path)], capture_output=True, cwd=path.parent, check=False)
    return ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]]


def test_cells_are_checked_placed_and_updated(server: Client, workspace: Path) -> None:
    notebook = Notebook(server, workspace / "train.ipynb",
                        [("markdown", MARKDOWN), ("code", IMPORTS), ("code", MOVE)])
    markdown, imports, move = notebook.all_diagnostics()
    assert markdown == [] and imports == []
    cuda = [d for d in move if d["code"] == "CUD102"]
    assert len(cuda) == 1
    start = MOVE.splitlines()[1].index("cuda()")
    assert cuda[0]["range"]["start"] == {"line": 1, "character": start}
    found = notebook.findings([markdown, imports, move])
    assert found == cli_findings(notebook.saved(workspace / "train_saved.ipynb"))

    edited = "%matplotlib inline\ny = torch.ones(2).cuda()\n\n\nz = torch.zeros(3).cuda()\n"
    notebook.edit(2, edited)
    updated = notebook.diagnostics(2)
    rows = sorted(d["range"]["start"]["line"] for d in updated if d["code"] == "CUD102")
    assert rows == [1, 4]
    found = notebook.findings([[], [], updated])
    assert found == cli_findings(notebook.saved(workspace / "edited_saved.ipynb"))

    notebook.edit(2, "%matplotlib inline\ny = torch.ones(2)\n")
    assert [d for d in notebook.diagnostics(2) if d["code"] == "CUD102"] == []

    notebook.close()
    assert all(server.diagnostics(uri) == [] for uri in notebook.cells)


def test_fix_all_edits_the_cells(server: Client, workspace: Path) -> None:
    notebook = Notebook(server, workspace / "fix.ipynb",
                        [("markdown", MARKDOWN), ("code", IMPORTS), ("code", MOVE)])
    move = notebook.all_diagnostics()[2]
    cuda = next(d for d in move if d["code"] == "CUD102")
    quick = server.request("textDocument/codeAction", {
        "textDocument": {"uri": notebook.cells[2]}, "range": cuda["range"],
        "context": {"diagnostics": [cuda], "only": ["quickfix"]}})
    assert any(a["title"].startswith("Fix CUD102") for a in quick)
    [fix_all] = server.request("textDocument/codeAction", {
        "textDocument": {"uri": notebook.cells[2]},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": [], "only": ["source.fixAll"]}})
    cli = cli_fixed(notebook.saved(workspace / "cli_fixed.ipynb"))
    texts = list(notebook.texts)
    for change in fix_all["edit"]["documentChanges"]:
        index = notebook.cells.index(change["textDocument"]["uri"])
        assert change["textDocument"]["version"] == notebook.versions[index]
        texts[index] = apply_edits(texts[index], change["edits"])
    assert texts[0] == MARKDOWN
    assert texts[2].startswith("%matplotlib inline\n")  # the magic stays where it was
    # the helper the fix calls comes once, in the cell that calls it, after its magic
    assert sum(text.count("def pick_device(") for text in texts) == 1
    assert texts[1] == IMPORTS and "def pick_device(" in texts[2]
    assert texts == cli
    notebook.texts = texts
    fixed = cli_findings(notebook.saved(workspace / "fixed_saved.ipynb"))
    assert not any(code == "CUD102" for code, *_ in fixed)
    notebook.close()

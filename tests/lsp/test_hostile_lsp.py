"""Hostile documents and messages, round three: the language server applies max-file-size
as the CLI does (a buffer or notebook over it is one diagnostic, never parsed), a document
whose path is a FIFO or a FIFO at the helper's place never blocks it, a malformed didChange
is one log line, and `--port 99999` is a usage error."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudalint.cli import main
from tests.lsp.client import Client, Document
from tests.lsp.test_notebooks import Notebook

LIMIT = 20_000
TRAIN = "import torch\nmodel = Net().cuda()\n"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile-lsp")
    (folder / "pyproject.toml").write_text(f"[tool.cudalint]\nmax-file-size = {LIMIT}\n")
    (folder / "pkg").mkdir()
    (folder / "pkg" / "__init__.py").write_text("")
    (folder / "main.py").write_text("from pkg import pipe\n")
    os.mkfifo(folder / "pkg" / "pipe.py")
    (folder / "flat").mkdir()
    os.mkfifo(folder / "flat" / "_device.py")
    return folder


@pytest.fixture(scope="module")
def server(workspace: Path) -> Iterator[Client]:
    with (workspace / "server.log").open("wb") as log:
        client = Client(workspace, log)
        try:
            client.initialize(workspace)
            yield client
        finally:
            client.kill()


def _fix_all(server: Client, document: Document) -> dict:
    [action] = document.actions(only=["source.fixAll"])
    resolved: dict = server.request("codeAction/resolve", action, timeout=30)
    return resolved


def test_a_buffer_over_max_file_size_is_one_diagnostic_not_parsed(server, workspace):
    big = TRAIN + "x = 1  # padding\n" * (LIMIT // 17)
    document = Document(server, workspace / "big.py", big)
    [only] = document.diagnostics()
    assert only["message"] == "cudalint: skipped: 20 kB, more than max-file-size (20 kB)"
    assert "code" not in only
    assert document.actions(only=["source.fixAll"]) == []
    assert [d.get("code") for d in document.change(TRAIN)] == ["CUD102"]  # now checked


def test_a_notebook_over_max_file_size_is_one_diagnostic(server, workspace):
    padding = "y = 2  # padding\n" * (LIMIT // 17)
    notebook = Notebook(server, workspace / "big.ipynb",
                        [("code", "import torch\nx = torch.zeros(1).cuda()\n"),
                         ("code", padding)])
    first, second = notebook.all_diagnostics()
    assert [d["message"] for d in first] == [
        "cudalint: skipped: 20 kB, more than max-file-size (20 kB)"]
    assert second == []


def test_a_document_whose_path_is_a_fifo_is_checked_from_its_buffer(server, workspace):
    document = Document(server, workspace / "pkg" / "pipe.py", TRAIN)
    assert [d.get("code") for d in document.diagnostics()] == ["CUD102"]
    assert list(_fix_all(server, document)["edit"]["changes"]) == [document.uri]


def test_a_fifo_at_the_helpers_place_does_not_block_fix_all(server, workspace):
    document = Document(server, workspace / "flat" / "train.py", TRAIN)
    assert [d.get("code") for d in document.diagnostics()] == ["CUD102"]
    edits = _fix_all(server, document)["edit"]["changes"][document.uri]
    fixed = document.apply({"edit": {"changes": {document.uri: edits}}})
    assert "from _device import" not in fixed and "pick_device()" in fixed  # an inline helper


def test_malformed_did_change_is_one_log_line_each(server, workspace):
    document = Document(server, workspace / "odd.py", TRAIN)
    document.diagnostics()
    for params in ({"textDocument": {"uri": document.uri}}, {"contentChanges": 5}, None):
        server.notify("textDocument/didChange", params)
    assert [d.get("code") for d in document.change(TRAIN + "\n")] == ["CUD102"]  # alive
    log = (workspace / "server.log").read_text()
    assert log.count("malformed message ignored: ") == 3, log
    assert "Traceback" not in log and "Unable to" not in log


@pytest.mark.parametrize("port", ["99999", "0", "-1", "http"])
def test_a_port_out_of_range_is_a_usage_error(capsys, port):
    assert main(["lsp", "--tcp", "--port", port]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == ("cudalint lsp: error: argument --port: not a port number "
                                 f"(1 to 65535): {port!r}\n")

"""Document URIs as an editor sends them: paths that need escaping, a symlinked folder, an
untitled buffer, a URI of no file. The diagnostics come back on the URI sent, byte for byte."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.client import Client

SOURCE = "import torch\n\nx = torch.ones(2).cuda()\n"
FOLDERS = ("a b", "thèse", "run+1", "x#y", "100%", "[lab]")
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def vscode_uri(path: Path) -> str:
    """`URI.file(path).toString()` as VS Code writes it: every byte of the UTF-8 path but the
    unreserved characters and `/` percent-encoded, in upper-case hex."""
    encoded = "".join(chr(byte) if byte in _UNRESERVED or byte == ord("/") else f"%{byte:02X}"
                      for byte in path.as_posix().encode())
    return f"file://{encoded}"


def test_the_encoder_matches_vscode() -> None:
    # from VS Code's URI tests (src/vs/base/test/common/uri.test.ts)
    assert vscode_uri(Path("/c:/win/path")) == "file:///c%3A/win/path"
    assert vscode_uri(Path("/a b/thèse+1#[x]%")) == \
        "file:///a%20b/th%C3%A8se%2B1%23%5Bx%5D%25"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("uris")
    for name in FOLDERS:
        (root / name).mkdir()
        (root / name / "model.py").write_text(SOURCE)
    os.symlink(root / "a b", root / "linked")
    return root


@pytest.fixture(scope="module")
def server(workspace: Path) -> Iterator[Client]:
    with (workspace.parent / f"{workspace.name}.log").open("wb") as log:
        client = Client(workspace, log)
        try:
            client.initialize(workspace)
            yield client
        finally:
            client.kill()


def open_document(server: Client, uri: str, text: str = SOURCE) -> list[dict[str, Any]]:
    server.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}})
    return server.diagnostics(uri, 1)


@pytest.mark.parametrize("folder", [*FOLDERS, "linked"])
def test_escaped_paths_come_back_as_sent(server: Client, workspace: Path, folder: str) -> None:
    uri = vscode_uri(workspace / folder / "model.py")
    diagnostics = open_document(server, uri)
    assert [d["code"] for d in diagnostics] == ["CUD102"]
    assert (uri, 1) in server.published  # the exact bytes sent: the client compares them
    assert all(published == uri for published, _ in server.published
               if published.endswith(f"{vscode_uri(Path(folder))[len('file://'):]}/model.py"))
    edited = SOURCE + "y = torch.zeros(1).cuda()\n"
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": edited}]})
    assert [d["code"] for d in server.diagnostics(uri, 2)] == ["CUD102", "CUD102"]
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert server.diagnostics(uri) == []


def test_an_untitled_buffer_is_checked_as_text(server: Client) -> None:
    uri = "untitled:Untitled-1"
    assert [d["code"] for d in open_document(server, uri)] == ["CUD102"]
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert server.diagnostics(uri) == []


def test_a_uri_of_no_file_is_logged(server: Client) -> None:
    uri = "vscode-vfs://github/someone/project/model.py"
    assert [d["code"] for d in open_document(server, uri)] == ["CUD102"]
    logged = [m["params"]["message"] for m in server.notifications
              if m.get("method") == "window/logMessage"]
    assert any(uri in message and "not a file" in message for message in logged), logged

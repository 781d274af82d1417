"""The server's opening (lsp/opening.py): `initialize` answered as pygls answers it, the first
document checked and published before pygls and lsprotocol load, the same diagnostics as the
linter's, published once, and pygls taking over at any other message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.bench_lsp import CAPABILITIES as VSCODE
from benchmarks.training_file import training_file
from cudalint import __version__
from cudalint.kinds import FileKind
from cudalint.lsp import opening
from cudalint.lsp.checker import Projects, check_text
from cudalint.lsp.handlers import create_server
from cudalint.lsp.linter import Linter
from cudalint.lsp.published import Published, converter
from cudalint.lsp.suppress import Noqa
from tests.lsp.client import Client, Document

SOURCE = "import torch\n\nx = torch.ones(2).cuda()  # é\ny = torch.device('cuda')\n"
NEOVIM = {  # what Neovim 0.10 announces of these
    "general": {"positionEncodings": ["utf-8", "utf-16", "utf-32"]},
    "textDocument": {"synchronization": {"didSave": True, "dynamicRegistration": False,
                                         "willSave": True, "willSaveWaitUntil": True}},
    "workspace": {"workspaceFolders": True, "applyEdit": True},
}
CLIENTS = {
    "vscode": VSCODE,
    "vscode notebooks": {**VSCODE, "notebookDocument": {"synchronization": {
        "dynamicRegistration": True, "executionSummarySupport": True}}},
    "neovim": NEOVIM,
    "helix": {"general": {"positionEncodings": ["utf-32", "utf-8", "utf-16"]}},
    "no capabilities": {},
    "unknown encodings first": {"general": {"positionEncodings": ["utf-7", "utf-8"]}},
    "unknown encodings only": {"general": {"positionEncodings": ["utf-7"]}},
    "will save refused": {"textDocument": {"synchronization": {"willSave": False}}},
    "file operations": {"workspace": {"fileOperations": {"didCreate": True, "willRename": True}}},
}


def pygls_answer(params: dict[str, Any]) -> Any:
    """pygls's answer to `initialize` for cudalint's server, in this process."""
    written: list[bytes] = []

    class Writer:
        def write(self, data: bytes) -> None:
            written.append(data)

        def close(self) -> None:
            pass

    server = create_server(debounce=0.05)
    try:
        server.protocol.set_writer(Writer())
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        server.protocol.handle_message(
            json.loads(json.dumps(request), object_hook=server.protocol.structure_message))
    finally:
        server.linter.stop()
    [answer] = written
    return json.loads(answer.partition(b"\r\n\r\n")[2])["result"]


@pytest.mark.parametrize("capabilities", CLIENTS.values(), ids=CLIENTS.keys())
def test_initialize_is_answered_as_pygls_answers_it(
    capabilities: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Linter, "warm_up", lambda self: None)  # (the answer does not read it)
    params = {"processId": None, "rootUri": None, "capabilities": capabilities}
    assert opening.initialize_result(params, __version__) == pygls_answer(params)


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frames(data: bytes) -> list[dict[str, Any]]:
    messages = []
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
        messages.append(json.loads(rest[:length]))
        data = rest[length:]
    return messages


# The opening alone, in a fresh interpreter: what it wrote, what it read, and whether it
# loaded pygls's server or lsprotocol.
_OPENING_ALONE = """\
import json, os, sys
from cudalint.lsp import opening
begun = opening.begin(sys.stdin.buffer, sys.stdout.buffer, "test")
loaded = sorted(m for m in sys.modules if m.startswith(("lsprotocol", "pygls.lsp", "cattrs")))
os.write(2, json.dumps({"read": begun.read.decode("latin-1"), "loaded": loaded,
                        "checked": begun.first is not None}).encode())
"""


def feed(program: list[str], sent: bytes, cwd: Path, env: dict[str, str] | None = None,
         ) -> tuple[bytes, bytes]:
    """What `python -c *program` wrote to stdout and stderr, given `sent` on its stdin, which
    is left open as an editor leaves it; it must exit 0 within a minute (one waiting for more
    is killed, and fails)."""
    process = subprocess.Popen([sys.executable, "-c", *program], cwd=cwd,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
    assert process.stdin and process.stdout and process.stderr
    hung = threading.Timer(60, process.kill)
    hung.start()
    try:
        process.stdin.write(sent)
        process.stdin.flush()
        written, logged = process.stdout.read(), process.stderr.read()
        assert process.wait(timeout=60) == 0
    finally:
        hung.cancel()
        process.kill()
        process.stdin.close()
    return written, logged


def run_opening(root: Path, messages: list[dict[str, Any]], before: bytes = b"",
                ) -> tuple[list[Any], dict[str, Any]]:
    """What the opening wrote, whether it checked a document and loaded any of lsprotocol,
    given `messages` after the bytes `before` (what it read for pygls is what was sent, up to
    some point)."""
    sent = before + b"".join(frame(m) for m in messages)
    written, logged = feed([_OPENING_ALONE], sent, root)
    state = json.loads(logged)
    read = state.pop("read").encode("latin-1")
    assert sent.startswith(read)
    return read_frames(written), {**state, "read": len(read)}


def opening_messages(root: Path, uri: str, text: str) -> list[dict[str, Any]]:
    return [
        {"id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": root.as_uri(), "capabilities": VSCODE,
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}]}},
        {"method": "initialized", "params": {}},
        {"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}}},
    ]


def test_the_opening_publishes_the_linters_diagnostics_without_lsprotocol(
    tmp_path: Path,
) -> None:
    path, text = tmp_path / "train.py", training_file(300)
    messages = opening_messages(tmp_path, path.as_uri(), text)
    written, state = run_opening(tmp_path, messages)
    answer, published = written
    assert answer["id"] == 1
    assert answer["result"] == opening.initialize_result({"capabilities": VSCODE}, "test")
    assert published["method"] == "textDocument/publishDiagnostics"
    assert published["params"]["uri"] == path.as_uri()
    assert published["params"]["version"] == 1
    # what the linter publishes for the same text (Published, written by the server's converter)
    findings = check_text(path, FileKind.PYTHON, text, Projects().for_path(path, (tmp_path,)))
    made = Published().diagnostics(findings, Noqa(text, FileKind.PYTHON), "utf-16", 1)
    assert published["params"]["diagnostics"] == [converter().unstructure(d) for d in made]
    assert len(made) > 20
    assert state == {"read": len(b"".join(frame(m) for m in messages)), "loaded": [],
                     "checked": True}


def test_the_opening_leaves_a_document_it_does_not_check_to_the_linter(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("torch==2.3.0+cu121\n")
    written, state = run_opening(tmp_path, opening_messages(
        tmp_path, "untitled:Untitled-1", SOURCE))
    assert [m.get("id") for m in written] == [1]  # the answer only
    assert state["loaded"] == []
    assert not state["checked"]


def test_the_opening_stops_at_a_message_it_does_not_answer(tmp_path: Path) -> None:
    first, *rest = opening_messages(tmp_path, (tmp_path / "a.py").as_uri(), SOURCE)
    shutdown = {"id": 2, "method": "shutdown"}
    written, state = run_opening(tmp_path, [first, shutdown, *rest])
    assert [m.get("id") for m in written] == [1]
    assert not state["checked"]
    assert state["read"] >= len(frame(first)) + len(frame(shutdown))


def test_a_message_without_a_length_hands_everything_to_pygls(tmp_path: Path) -> None:
    messages = opening_messages(tmp_path, (tmp_path / "a.py").as_uri(), SOURCE)
    written, state = run_opening(tmp_path, messages, before=b"Content-Type: x\r\n\r\n{}")
    assert written == []
    assert not state["checked"]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Client]:
    with (tmp_path / "server.log").open("wb") as log:
        client = Client(tmp_path, log)
        try:
            yield client
        finally:
            client.kill()


def logged(root: Path) -> str:
    return (root / "server.log").read_text(errors="replace")


@pytest.mark.parametrize("folder", ["a b", "thèse", "100%"])
def test_the_first_diagnostics_are_published_once_as_the_linter_publishes_them(
    client: Client, tmp_path: Path, folder: str,
) -> None:
    (tmp_path / folder).mkdir()
    path = tmp_path / folder / "model.py"
    client.initialize(tmp_path, VSCODE)
    document = Document(client, path, SOURCE)  # its URI escaped: `a%20b`, `th%C3%A8se`
    first = document.diagnostics()
    again = document.change(SOURCE)  # the same text, checked by the linter
    assert [d["code"] for d in first] == ["CUD102", "CUD101"]
    assert first == [{**d, "data": {**d["data"], "version": 1}} for d in again]
    assert client.published == [(document.uri, 1), (document.uri, 2)]  # once each
    assert client.shutdown() == 0
    assert "opening" not in logged(tmp_path) and "initialize was" not in logged(tmp_path)


def test_the_notifications_read_past_are_none_that_cudalint_handles(tmp_path: Path) -> None:
    server = create_server(debounce=0.05)
    server.linter.stop()
    assert not set(opening.UNREAD) & set(server.protocol.fm.features)
    path = tmp_path / "train.py"
    initialize, initialized, opened = opening_messages(tmp_path, path.as_uri(), SOURCE)
    written, state = run_opening(tmp_path, [
        initialize, {"method": "$/setTrace", "params": {"value": "verbose"}}, initialized,
        {"method": "workspace/didChangeConfiguration", "params": {"settings": {"a": 1}}},
        opened])
    assert [m.get("id", m.get("method")) for m in written] == [
        1, "textDocument/publishDiagnostics"]
    assert state["checked"]


def test_pygls_takes_over_from_any_other_message(client: Client, tmp_path: Path) -> None:
    """Here a workspace folder added before the file is opened (the roots the opening would
    check it under are no longer the workspace's)."""
    client.initialize(tmp_path, NEOVIM)
    project = tmp_path / "project"
    project.mkdir()
    client.notify("workspace/didChangeWorkspaceFolders", {"event": {
        "added": [{"uri": project.as_uri(), "name": "project"}], "removed": []}})
    document = Document(client, project / "train.py", SOURCE)
    assert [d["code"] for d in document.diagnostics()] == ["CUD102", "CUD101"]
    [fix] = document.actions(only=["source.fixAll.cudalint"])
    assert "pick_device()" in document.apply(fix)
    assert client.shutdown() == 0
    assert "initialize was" not in logged(tmp_path)


@pytest.mark.skipif(os.name != "posix", reason="the opening is POSIX's")
def test_an_edit_sent_during_the_first_check_is_not_overtaken(
    client: Client, tmp_path: Path,
) -> None:
    client.initialize(tmp_path, VSCODE)
    path = tmp_path / "train.py"
    opened = {"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": path.as_uri(), "languageId": "python", "version": 1, "text": training_file(500)}}}
    edited = {"method": "textDocument/didChange", "params": {
        "textDocument": {"uri": path.as_uri(), "version": 2}, "contentChanges": [{"text": SOURCE}]}}
    assert client.process.stdin is not None
    client.process.stdin.write(frame(opened) + frame(edited))  # both there before it checks
    client.process.stdin.flush()
    document = Document.__new__(Document)
    document.server, document.uri, document.version = client, path.as_uri(), 2
    assert [d["code"] for d in document.diagnostics()] == ["CUD102", "CUD101"]
    assert client.published == [(document.uri, 2)]

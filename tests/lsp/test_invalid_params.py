"""Every request is answered (issue 31, item 17): one whose params do not fit its method with a
JSON-RPC InvalidParams error, one sent after `shutdown` with InvalidRequest; the server goes on
answering the requests that follow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.client import Client, running

INVALID_PARAMS = -32602
INVALID_REQUEST = -32600
WAIT = 30.0  # for an answer that comes at once; a server that stays silent fails the test


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Client]:
    with running(tmp_path, tmp_path / "server.log") as client:
        yield client


def _answer(server: Client, method: str, params: Any) -> dict[str, Any]:
    ident = server.ask(method, params)
    return server._wait(lambda m: m.get("id") == ident and "method" not in m, WAIT,
                        f"the answer to {method}")


@pytest.mark.parametrize(("method", "params"), [
    ("textDocument/codeAction", {"textDocument": 5}),
    ("textDocument/codeAction", None),
    ("textDocument/codeAction", [1, 2]),
    ("textDocument/codeAction", {"textDocument": {"uri": "file:///x.py"}, "range": "all",
                                 "context": {"diagnostics": []}}),
], ids=["not-a-document", "none", "a-list", "range-text"])
def test_a_request_with_invalid_params_gets_an_error_answer(server: Client, method: str,
                                                            params: Any) -> None:
    answer = _answer(server, method, params)
    assert answer["error"]["code"] == INVALID_PARAMS, answer
    assert "result" not in answer
    assert server.request("shutdown", timeout=WAIT) is None  # still answering


def test_a_request_after_shutdown_gets_an_error_answer(server: Client) -> None:
    assert server.request("shutdown", timeout=WAIT) is None
    answer = _answer(server, "textDocument/codeAction", {
        "textDocument": {"uri": "file:///x.py"},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": []}})
    assert answer["error"]["code"] == INVALID_REQUEST, answer
    server.notify("exit")
    assert server.process.wait(timeout=WAIT) == 0

"""An internal error in a check fails loudly: one diagnostic at the top of the document naming
the exception, and one `window/showMessage` per version of the document."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.client import Client, Document

# The server, with the engine's Python check failing on `broken.py` as a rule's bug would.
FAILING_SERVER = """
import sys
from cudalint.lsp import checker

real = checker.lint_python

def failing(data, path, *args, **kwargs):
    if path.name == "broken.py":
        raise ValueError("a rule's bug")
    return real(data, path, *args, **kwargs)

checker.lint_python = failing
from cudalint.lsp.server import main
sys.exit(main([]))
"""
SOURCE = "import torch\n\nx = torch.ones(2).cuda()\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("failures")


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[Client]:
    with (root / "server.log").open("wb") as log:
        client = Client(root, log, command=[sys.executable, "-c", FAILING_SERVER])
        try:
            client.initialize(root)
            yield client
        finally:
            client.kill()


def shown(server: Client) -> list[dict[str, Any]]:
    """The showMessage notifications received so far (taken)."""
    found = [m for m in server.notifications if m.get("method") == "window/showMessage"]
    server.notifications = [m for m in server.notifications if m not in found]
    return [m["params"] for m in found]


def test_a_failing_check_is_one_diagnostic_and_one_message(server: Client, root: Path) -> None:
    healthy = Document(server, root / "healthy.py", SOURCE)
    assert [d["code"] for d in healthy.diagnostics()] == ["CUD102"]
    assert shown(server) == []

    document = Document(server, root / "broken.py", SOURCE)
    [failure] = document.diagnostics()
    assert failure["message"] == "cudalint failed on this file: ValueError: a rule's bug"
    assert failure["severity"] == 1  # error
    assert failure["range"] == {"start": {"line": 0, "character": 0},
                                "end": {"line": 0, "character": 0}}
    assert shown(server) == [{"type": 1, "message": failure["message"]}]

    # the same version checked again (a save) publishes it again, but says it once
    server.notify("textDocument/didSave", {"textDocument": {"uri": document.uri}})
    assert document.diagnostics() == [failure]
    assert shown(server) == []

    # a new version fails again: said again
    [again] = document.change(SOURCE + "y = 1\n")
    assert again["message"] == failure["message"]
    assert shown(server) == [{"type": 1, "message": failure["message"]}]

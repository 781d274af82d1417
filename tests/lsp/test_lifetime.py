"""The server ends with its editor: when its stdin closes (even with checks under way), on
`exit`, and when the process `initialize` named is gone."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lsp.client import Client, Document, long_file

# Generous against a loaded CI machine; benchmarks/bench_lsp.py measures the real figure.
GONE_WITHIN = 5.0


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Client]:
    with (tmp_path / "server.log").open("wb") as log:
        started = Client(tmp_path, log, ["--debounce-ms", "0"])
        try:
            yield started
        finally:
            started.kill()


def exit_status(client: Client) -> int:
    return client.process.wait(timeout=GONE_WITHIN)


def test_closing_stdin_ends_the_server_during_checks(client: Client, tmp_path: Path) -> None:
    client.initialize(tmp_path)
    doc = Document(client, tmp_path / "train.py", long_file())
    for index in range(3):  # each edit asks for another check of the long file
        doc.edit(doc.text + f"y{index} = x.cuda()\n")
    client.close_input()
    assert exit_status(client) == 1  # gone without `shutdown`, not waiting for its checks


def test_exit_ends_the_server_though_stdin_stays_open(client: Client, tmp_path: Path) -> None:
    client.initialize(tmp_path)
    Document(client, tmp_path / "train.py", "x.cuda()\n").diagnostics()
    client.notify("exit")
    assert exit_status(client) == 1  # `exit` before `shutdown`, as LSP says


def test_the_server_ends_when_the_editor_process_dies(client: Client, tmp_path: Path) -> None:
    editor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        client.initialize(tmp_path, process_id=editor.pid)
        assert Document(client, tmp_path / "a.py", "x.cuda()\n").diagnostics()
        assert client.process.poll() is None
    finally:
        editor.kill()
        editor.wait(timeout=GONE_WITHIN)
    assert exit_status(client) == 1

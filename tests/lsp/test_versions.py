"""Versions, through a real server on stdio: diagnostics carry the version they were made for, a
newer edit supersedes an older check, and code actions answer for the document's current
version or not at all."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cudalint.runtime.helper import write_helper
from tests.lsp.client import Client, Document, cli_fixed, long_file

LINEAR = "import torch\n\nmodel = torch.nn.Linear(2, 2)\n"
ON_CUDA = "import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\n"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A flat project with the standalone helper, which fixes import (as the CLI's do)."""
    folder = tmp_path_factory.mktemp("versions")
    write_helper(folder / "_device.py", force=False)
    return folder


# What VS Code and Neovim say of their code actions: an action's edit may be asked for when
# the user picks it (codeAction/resolve).
RESOLVES = {"textDocument": {"codeAction": {
    "dataSupport": True, "resolveSupport": {"properties": ["edit"]},
    "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source"]}}}}}


@contextmanager
def server(workspace: Path, debounce_ms: int,
           capabilities: dict[str, Any] | None = None) -> Iterator[Client]:
    with (workspace / "server.log").open("ab") as log:
        client = Client(workspace, log, ["--debounce-ms", str(debounce_ms)])
        try:
            client.initialize(workspace, capabilities)
            yield client
        finally:
            client.kill()


def published(client: Client, doc: Document) -> list[int | None]:
    return [version for uri, version in client.published if uri == doc.uri]


def codes(diagnostics: list[dict[str, Any]]) -> list[str]:
    return [d.get("code", "error") for d in diagnostics]


def line_range(line: int) -> dict[str, Any]:
    """A selection of the whole line, as a diagnostic-shaped dict that `ask_actions` takes."""
    return {"range": {"start": {"line": line, "character": 0},
                      "end": {"line": line, "character": 1000}}, "message": "selection"}


def test_diagnostics_carry_the_version_they_were_made_for(workspace: Path) -> None:
    with server(workspace, debounce_ms=50) as client:
        doc = Document(client, workspace / "versioned.py", ON_CUDA)
        assert [d["data"]["version"] for d in doc.diagnostics()] == [1]
        doc.edit(ON_CUDA + "x = torch.zeros(2).cuda()\n")
        assert [d["data"]["version"] for d in doc.diagnostics()] == [2, 2]
        assert doc.change(LINEAR) == []
        assert published(client, doc) == [1, 2, 3]


def test_quick_edits_publish_the_last_version_only(workspace: Path) -> None:
    with server(workspace, debounce_ms=500) as client:
        doc = Document(client, workspace / "typing.py", LINEAR)
        assert doc.diagnostics() == []
        for index in range(3):  # three keystrokes, well within the debounce
            doc.edit(doc.text + f"y{index} = torch.zeros(2).cuda()\n")
        assert codes(doc.diagnostics()) == ["CUD102"] * 3
        assert published(client, doc) == [1, 4]


def test_a_check_overtaken_by_an_edit_is_never_published(workspace: Path) -> None:
    with server(workspace, debounce_ms=0) as client:
        # Version 1 is long to check; version 2 comes while it is checked (or before).
        doc = Document(client, workspace / "overtaken.py", long_file())
        doc.edit(ON_CUDA)
        assert codes(doc.diagnostics()) == ["CUD102"]
        assert published(client, doc) == [2]


def test_a_code_action_waits_for_the_version_it_is_asked_about(workspace: Path) -> None:
    with server(workspace, debounce_ms=5000) as client:
        doc = Document(client, workspace / "pending.py", LINEAR)
        assert doc.diagnostics() == []
        doc.edit(ON_CUDA)  # its check waits out the debounce; the request does not wait
        actions = doc.actions(line_range(2))
        fix = next(a for a in actions if a["title"].startswith("Fix CUD102"))
        assert doc.apply(fix) == cli_fixed(workspace, ON_CUDA)
        assert codes(doc.diagnostics()) == ["CUD102"]


def test_a_code_action_overtaken_by_an_edit_is_refused(workspace: Path) -> None:
    with server(workspace, debounce_ms=0) as client:
        big = long_file()
        doc = Document(client, workspace / "moving.py", big)
        assert doc.diagnostics() == []
        doc.edit(big + "z = torch.zeros(2).cuda()\n")
        asked = doc.ask_actions(line_range(big.count("\n")))
        doc.edit("# the whole file replaced while the actions were made\n" + ON_CUDA)
        assert client.response(asked, "textDocument/codeAction") == []
        assert codes(doc.diagnostics()) == ["CUD102"]


def test_diagnostics_of_an_older_version_sent_with_a_request_are_ignored(
    workspace: Path
) -> None:
    with server(workspace, debounce_ms=50) as client:
        doc = Document(client, workspace / "older.py", "a = x.cuda()\n")
        [old] = doc.diagnostics()
        [new] = doc.change("a = y.cuda()\n")
        assert new["range"] == old["range"]
        elsewhere = line_range(5)["range"]

        def titles(sent: dict[str, Any]) -> list[str]:
            found = client.request("textDocument/codeAction", {
                "textDocument": {"uri": doc.uri}, "range": elsewhere,
                "context": {"diagnostics": [sent], "only": ["quickfix"]}})
            return [action["title"] for action in found]

        assert titles(old) == []
        assert "Disable CUD102 for this line" in titles(new)


def test_a_document_not_open_has_no_actions(workspace: Path) -> None:
    with server(workspace, debounce_ms=50) as client:
        closed = workspace / "on_disk.py"
        closed.write_text(ON_CUDA, encoding="utf-8")
        assert client.request("textDocument/codeAction", {
            "textDocument": {"uri": closed.as_uri()}, "range": line_range(2)["range"],
            "context": {"diagnostics": []}}) == []


def test_quick_fix_edits_are_made_for_the_version_asked_about(workspace: Path) -> None:
    with server(workspace, debounce_ms=0) as client:
        doc = Document(client, workspace / "moved.py", ON_CUDA)
        assert codes(doc.diagnostics()) == ["CUD102"]
        first = [a["title"] for a in doc.actions(line_range(2))]
        assert "Fix CUD102: Replace with `.to(pick_device())`" in first
        moved = "# a comment that moves every line down\n" + ON_CUDA
        assert codes(doc.change(moved)) == ["CUD102"]
        fix = next(a for a in doc.actions(line_range(3)) if a["title"].startswith("Fix CUD102"))
        assert doc.apply(fix) == cli_fixed(workspace, moved)


def test_an_edit_after_a_still_spell_is_checked_at_once(workspace: Path) -> None:
    """The debounce's leading edge: an edit once the document's last check is over is
    checked without waiting; the edits right behind it, while that check runs, are checked
    once, last version only, after the still spell. (That the first is not delayed is
    counted in test_the_debounce_has_a_leading_edge, on the server's own clock.)"""
    # 3 s: the three edits of the burst reach the server well within it, even on a loaded
    # machine (at 1.5 s one of them came late, and was a leading edge of its own).
    with server(workspace, debounce_ms=3000) as client:
        doc = Document(client, workspace / "leading.py", LINEAR)
        assert doc.diagnostics() == []
        assert codes(doc.change(ON_CUDA)) == ["CUD102"]  # at once: well within the 3 s
        for index in range(3):
            doc.edit(doc.text + f"y{index} = torch.zeros(2).cuda()\n")
        assert codes(doc.diagnostics()) == ["CUD102"] * 4
        # 3 is checked at once, but 4 and 5 come while that check runs (3's diagnostics,
        # out of date then, are not published); on a loaded machine 4 may come after it:
        # the last, 5, after the still spell, and never a version twice
        shown = published(client, doc)
        assert shown[:2] == [1, 2] and shown[-1] == 5 and shown == sorted(set(shown))


def test_the_debounce_has_a_leading_edge(monkeypatch: pytest.MonkeyPatch) -> None:
    """The delay each version's check is asked with, on a clock the test moves: the opening
    and the first change after a still spell at once, the rest of a burst after the debounce
    while a check of the document waits or runs, and a change once the last check is over at
    once, however soon it follows the one before (an editor that waits for each answer)."""
    from cudalint.lsp import linter as module

    clock = [100.0]
    monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    document = SimpleNamespace(version=1)
    workspace = SimpleNamespace(get_text_document=lambda uri: document)
    linter = module.Linter(SimpleNamespace(workspace=workspace), debounce=1.5)
    linter.scheduler.stop()
    uri = "file:///leading.py"
    asked: list[tuple[int, float]] = []

    def ask(what: str, version: int, delay: float) -> None:  # a check now waits or runs
        asked.append((version, delay))
        linter._asked[what, uri] = (version, 0)

    monkeypatch.setattr(linter, "_snapshot", lambda document: document.version)
    monkeypatch.setattr(linter, "_ask", ask)
    for version, when, over in ((1, 100.0, True), (2, 102.0, False), (3, 102.1, False),
                                (4, 102.2, False), (5, 103.0, True), (6, 103.1, False),
                                (7, 103.2, True), (8, 110.0, True)):
        document.version, clock[0] = version, when
        linter.changed(uri, 0.0 if version == 1 else linter.debounce)
        if over:  # the check asked for last has been delivered
            del linter._asked[module.CHECK, uri]
    assert asked == [(1, 0.0), (2, 0.0), (3, 1.5), (4, 1.5), (5, 1.5), (6, 0.0), (7, 1.5),
                     (8, 0.0)]


def test_fix_all_is_made_when_the_client_resolves_it(workspace: Path) -> None:
    """A client that resolves actions gets fix-all without its edit (a fix of the whole
    file) until the user picks it; resolved, it is the CLI's fix of the version it was
    offered for, and nothing once the document has changed."""
    text = ON_CUDA + 'x = torch.zeros(2, device="cuda:0")\n'
    with server(workspace, debounce_ms=50, capabilities=RESOLVES) as client:
        doc = Document(client, workspace / "resolved.py", text)
        assert codes(doc.diagnostics()) == ["CUD102", "CUD101"]
        [offered] = doc.actions(only=["source.fixAll"])
        assert "edit" not in offered
        resolved = client.request("codeAction/resolve", offered)
        assert doc.apply(resolved) == cli_fixed(workspace, text)
        doc.change(text + "# a comment\n")
        assert "edit" not in client.request("codeAction/resolve", offered)

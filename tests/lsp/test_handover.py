"""The opening in a child process while the server loads (lsp/handover.py): the server gets
what the child read, its answer to `initialize` and its check, as if the opening had run in
it; a child that cannot hand over its check hands over what it read."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.test_opening import SOURCE, feed, frame, opening_messages, read_frames

pytestmark = pytest.mark.skipif(os.name != "posix", reason="fork is POSIX's")

# The handover alone, in a fresh interpreter: `load` notes the process it ran in and whether
# the opening had run yet in this one; then what came back.
_HANDOVER = """\
import json, os, sys
from cudalint.lsp import handover, opening
if sys.argv[1] == "unpicklable":
    def refuse(self):
        raise TypeError("not this one")
    opening.FirstCheck.__reduce__ = refuse
def load():
    return {"pid": os.getpid(), "opening module loaded": "cudalint.lsp.checker" in sys.modules}
begun, loaded = handover.opened_beside(sys.stdin.buffer, sys.stdout.buffer, "test", load)
os.write(2, json.dumps({
    "read": begun.read.decode("latin-1"), "answered": begun.answered[0], "loaded": loaded,
    "pid": os.getpid(), "handed": begun.stream is None,
    "codes": [f.code for f in begun.first.findings] if begun.first else None,
    "versions": [list(key) for key in begun.catch_up()],
}).encode())
"""


def run_handover(root: Path, how: str, env: dict[str, str] | None = None,
                 ) -> tuple[list[Any], dict[str, Any], bytes]:
    uri = (root / "train.py").as_uri()
    sent = b"".join(frame(m) for m in opening_messages(root, uri, SOURCE))
    written, logged = feed([_HANDOVER, how], sent, root, env)
    return read_frames(written), json.loads(logged.splitlines()[-1]), sent


def test_the_child_opens_while_the_server_loads_and_hands_everything_over(
        tmp_path: Path) -> None:
    written, state, sent = run_handover(tmp_path, "plain")
    assert [m.get("id", m.get("method")) for m in written] == [
        1, "textDocument/publishDiagnostics"]  # from the child, once
    assert state["handed"] and state["read"].encode("latin-1") == sent
    assert state["loaded"] == {"pid": state["pid"], "opening module loaded": False}
    assert state["answered"] == 1 and state["codes"] == ["CUD102", "CUD101"]
    assert state["versions"] == [[(tmp_path / "train.py").as_uri(), 1]]


def test_a_check_that_cannot_be_handed_over_leaves_what_was_read(tmp_path: Path) -> None:
    written, state, sent = run_handover(tmp_path, "unpicklable")
    assert [m.get("id", m.get("method")) for m in written] == [
        1, "textDocument/publishDiagnostics"]
    assert state["read"].encode("latin-1") == sent and state["answered"] == 1
    assert state["codes"] is None  # the linter checks the document again


def test_without_fork_the_opening_runs_first_in_the_server(tmp_path: Path) -> None:
    written, state, sent = run_handover(tmp_path, "plain", {"CUDALINT_LSP_NO_FORK": "1"})
    assert not state["handed"] and state["read"].encode("latin-1") == sent
    assert state["loaded"]["opening module loaded"]  # the opening ran before the load
    assert state["codes"] == ["CUD102", "CUD101"] and len(written) == 2

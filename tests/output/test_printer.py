"""Plain output is what rich writes to a pipe, without importing rich; a terminal gets colour."""

from __future__ import annotations

import io

import pytest

from cudalint.output.printer import Printer

_LINES = [
    ("train.py", "bold"), (":3:9: ", "cyan"), ("CUD102", "bold red"), " ", "`.cuda()` moves",
    ("\n3 | ", "blue"), "\tx = model\t.cuda()  # tab-indented\r\n", ("  | ", "blue"),
    ("        ^^^^", "bold red"), " page\x0cbreak and a bell\x07",
]


def _through_rich(*pieces: str | tuple[str, str], end: str = "\n") -> str:
    stream = io.StringIO()
    Printer(stream, styled=True).print(*pieces, end=end)
    return stream.getvalue()


def _plain(*pieces: str | tuple[str, str], end: str = "\n") -> str:
    stream = io.StringIO()
    Printer(stream, styled=False).print(*pieces, end=end)
    return stream.getvalue()


_DIFF = "--- a.py\n+++ a.py\n@@ -1 +1 @@\n-\tx.cuda()\n+\tx.to(d)\n"


@pytest.mark.parametrize("pieces", [
    _LINES, [], ["Found 2 errors."], [("All checks passed!", "green")], [_DIFF],
])
def test_plain_text_is_what_rich_writes_to_a_pipe(pieces, monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert _plain(*pieces) == _through_rich(*pieces)
    assert _plain(*pieces, end="") == _through_rich(*pieces, end="")


def test_a_terminal_gets_styles(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    stream = io.StringIO()
    Printer(stream).print(("CUD102", "bold red"), " message")
    assert "\x1b[" in stream.getvalue()
    assert "CUD102" in stream.getvalue()


def test_a_pipe_gets_none(monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    stream = io.StringIO()
    Printer(stream).print(("CUD102", "bold red"), " message")
    assert stream.getvalue() == "CUD102 message\n"

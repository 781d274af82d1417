"""A file that does not parse: CPython's message and position, on the command line and on
standard input."""

from __future__ import annotations

import io
import sys

from cudalint.cli import main

NEVER_CLOSED = "import torch\nx = (\n    torch.zeros(3).cuda()\n"


def test_syntax_error_gives_cpythons_message_and_position(chdir_tmp, capsys):
    (chdir_tmp / "syn.py").write_text(NEVER_CLOSED)
    assert main(["check", "--output-format", "concise", "syn.py"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "syn.py:2:5: SyntaxError: '(' was never closed"


def test_syntax_error_on_standard_input(chdir_tmp, capsysbinary, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(NEVER_CLOSED.encode())))
    assert main(["check", "--fix", "--stdin-filename", "syn.py", "-"]) == 1
    out, err = capsysbinary.readouterr()
    assert out == NEVER_CLOSED.encode()  # the buffer comes back as it was
    assert err.decode().startswith("syn.py:2:5: SyntaxError: '(' was never closed")

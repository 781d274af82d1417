"""`cudalint lsp`: the language server. It checks each open document's buffer with the engine
`cudalint check` runs on every open, change and save (re-reading only the functions an edit
changed, lsp/incremental.py), publishes the findings as diagnostics, and answers code actions
with the findings' fixes, noqa comments and fix-all.

Notebook documents (LSP 3.17 `notebookDocument/*`, `jupyter-notebook` notebooks with Python
cells) are checked as `cudalint check` checks the saved `.ipynb`, and each finding is published
on its cell (lsp/notebooks.py); a `.ipynb` opened as a text document (its JSON) is not checked.

Over stdio the server's opening (lsp/opening.py) answers `initialize` and publishes the first
document's diagnostics, in a child process while this one loads pygls and lsprotocol
(lsp/handover.py); pygls then reads every message again.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cudalint.lsp.handlers import Server

EXIT_ERROR = 2
DEBOUNCE_MS = 50


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit_:  # --help, or a usage error argparse has printed
        return exit_.code if isinstance(exit_.code, int) else EXIT_ERROR
    if not all(importlib.util.find_spec(name) for name in ("pygls", "lsprotocol")):
        print("cudalint lsp: error: pygls is not installed; pip install 'cudalint[lsp]'",
              file=sys.stderr)
        return EXIT_ERROR
    # Start-up makes thousands of objects that live as long as the server (modules, classes,
    # the rules' tables): the cyclic collector would scan them over and over meanwhile.
    gc.disable()
    if args.tcp:
        server = _server(args)
        gc.enable()
        try:
            server.start_tcp(args.host, args.port)
        except OSError as error:  # the port is taken, the host unknown
            print(f"cudalint lsp: error: cannot listen on {args.host}:{args.port}: "
                  f"{error.strerror or error}", file=sys.stderr)
            return EXIT_ERROR
    else:
        from cudalint import __version__
        from cudalint.lsp import handover, opening

        stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
        # the first diagnostics, from a child, while this process loads pygls
        begun, server = handover.opened_beside(stdin, stdout, __version__,
                                               lambda: _server(args, prepared=True))
        server.linter.adopt(begun, begun.catch_up())
        gc.enable()
        # pygls reads the opening's messages again; returns when stdin closes or the client
        # sends `exit`
        server.start_io(opening.Replayed(begun.read, stdin),  # type: ignore[arg-type]
                        opening.Answered(stdout, begun.answered))  # type: ignore[arg-type]
    from cudalint.lsp import lifetime

    code = 0 if server.clean_exit else 1
    server.linter.stop()
    # A check under way would hold the interpreter's teardown until it ends: leave at once.
    lifetime.leave(code)
    return code


def _server(args: argparse.Namespace, *, prepared: bool = False) -> Server:
    """`prepared`: made ready for the first messages (handlers.prepare)."""
    from cudalint.lsp import malformed
    from cudalint.lsp.handlers import create_server, prepare

    malformed.install()
    server = create_server(debounce=args.debounce_ms / 1000)
    return prepare(server) if prepared else server


def _milliseconds(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"not a number of milliseconds: {value!r}")
    return number


def _port(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number (1 to 65535): {value!r}")
    return number


def _parser() -> argparse.ArgumentParser:
    from cudalint.usage import OneLineParser

    parser = OneLineParser(prog="cudalint lsp", description="Run cudalint as a language server.")
    channel = parser.add_mutually_exclusive_group()
    channel.add_argument("--stdio", action="store_true", help="speak over stdin/stdout (default)")
    channel.add_argument("--tcp", action="store_true", help="listen on --host:--port")
    parser.add_argument("--host", default="127.0.0.1", help="with --tcp (default: 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=2087, help="with --tcp (default: 2087)")
    parser.add_argument("--debounce-ms", type=_milliseconds, default=DEBOUNCE_MS,
                        metavar="MS", help="re-check a changed document once it has been "
                                           f"still this long (default: {DEBOUNCE_MS})")
    return parser

"""The server's opening in a child process, while the server loads beside it.

An editor that opens a file starts the server and waits for the file's diagnostics, then asks
for code actions at once. The opening (lsp/opening.py) publishes those diagnostics before pygls
and lsprotocol load; loaded after it, they held the first code action and the first edits for
as long again (lsprotocol's types alone cost about a third of a start-up's CPU). Here the
opening runs in a child forked at launch, which answers `initialize`, checks the first document
and publishes its diagnostics, while this process loads pygls, lsprotocol and the handlers on
the other core. The child then hands over what it has read from stdin, its answer to
`initialize` and its check (pickled through a pipe), and ends; this process serves from there
as if the opening had run in it. stdin and stdout are the same open files in both, and only
one process reads or writes them at a time: the child until it hands over, this one after.

Not on Windows (no fork), nor where `CUDALINT_LSP_NO_FORK` is set: the opening then runs in
this process before the load, as it did. A child that dies without handing over leaves this
process to pygls with nothing read, which the editor sees as a server that never answered
(logged).
"""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import Callable
from typing import BinaryIO, TypeVar

from cudalint.lsp.opening import Opening, begin

logger = logging.getLogger(__name__)

NO_FORK = "CUDALINT_LSP_NO_FORK"
Loaded = TypeVar("Loaded")


def opened_beside(stdin: BinaryIO, stdout: BinaryIO, version: str,
                  load: Callable[[], Loaded]) -> tuple[Opening, Loaded]:
    """The opening (run in a child, lsp/opening.begin) and what `load()` returns (run here
    meanwhile); in this process one after the other where a child cannot be forked."""
    if not hasattr(os, "fork") or os.name != "posix" or os.environ.get(NO_FORK):
        begun = begin(stdin, stdout, version)
        return begun, load()
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the opening, then the handover
        os.close(reader)
        _open_and_hand_over(stdin, stdout, version, writer)
    os.close(writer)
    loaded = load()
    with os.fdopen(reader, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    try:
        begun = pickle.loads(data)
    except Exception:  # the child died: pygls reads what is left
        logger.error("the server's opening ended without handing over (%d bytes)", len(data))
        begun = Opening()
    return begun, loaded


def _open_and_hand_over(stdin: BinaryIO, stdout: BinaryIO, version: str, writer: int) -> None:
    """The child's life: the opening, then what it read and did, to the parent; it never
    returns (os._exit: the parent's state is not the child's to tear down)."""
    code = 0
    try:
        begun = begin(stdin, stdout, version)
        arrived = begun.catch_up()
        try:
            data = pickle.dumps(begun.handed(arrived), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # what it read, at least: the linter checks the document again
            logger.exception("the server's opening could not hand over its check")
            data = pickle.dumps(begun.handed(arrived, checked=False))
        with os.fdopen(writer, "wb") as pipe:
            pipe.write(data)
    except BaseException:  # the child must end here, whatever happened
        logger.exception("the server's opening failed")
        code = 1
    finally:
        os._exit(code)

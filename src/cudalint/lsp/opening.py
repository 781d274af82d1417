"""The server's opening over stdio, before pygls and lsprotocol load: their import takes about
a third of a start-up's CPU, and an editor opening a file waits for its diagnostics through
all of it. The opening answers `initialize` with the capabilities pygls announces for this
server, checks the first document the editor opens and publishes its diagnostics, all with
the standard library's json and the engine; then pygls takes over (lsp/server.py) and reads
every message again from the first, as if it had read them itself. Its own answer to
`initialize` is not sent (it is compared with the opening's; a difference is logged), and
the linter adopts the opening's check of the document (lsp/linter.py) when its snapshot of
the document is the same, so nothing is checked or published twice.

Only the usual opening goes this way: `initialize`, `initialized`, and `textDocument/didOpen`
of a Python file with a `file:` URI (notifications that change nothing the check reads may
come between them: `UNREAD`). At any other message, or when the check cannot be
made as the linter makes it (a configuration error, an excluded file, a failure), the opening
stops and pygls handles everything from there."""

from __future__ import annotations

import io
import json
import logging
import os
import select
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from pygls.uris import from_fs_path, to_fs_path  # (no lsprotocol: the standard library's)

from cudalint.kinds import FileKind
from cudalint.lsp.lines import UTF16

if TYPE_CHECKING:  # the engine loads once `initialize` is answered
    from cudalint.finding import Finding
    from cudalint.lsp.checker import Projects, Snapshot
    from cudalint.lsp.incremental import UnitCache

Form = dict[str, Any]  # a message's JSON

logger = logging.getLogger(__name__)

INITIALIZE, INITIALIZED, DID_OPEN = "initialize", "initialized", "textDocument/didOpen"
DID_CHANGE = "textDocument/didChange"
# Notifications the opening reads past (pygls reads them later): nothing the first check
# reads depends on them. cudalint handles neither (pygls ignores the first; the second sets
# what pygls traces), which tests/lsp/test_opening.py holds.
UNREAD = ("workspace/didChangeConfiguration", "$/setTrace")
PUBLISH = "textDocument/publishDiagnostics"
_HEADER_END = b"\r\n\r\n"
_CONTENT_TYPE = "application/vscode-jsonrpc; charset=utf-8"
_ENCODINGS = ("utf-8", "utf-16", "utf-32")  # the position encodings pygls speaks
# What lsp/handlers.py registers, as pygls announces it (tests/lsp/test_opening.py holds the
# two equal, and `Answered` compares them at every start).
CODE_ACTION_KINDS = ["quickfix", "source.fixAll.cudalint"]
NOTEBOOK_SYNC = {"notebookSelector": [{"notebook": "jupyter-notebook",
                                       "cells": [{"language": "python"}]}],
                 "save": True}


@dataclass
class FirstCheck:
    """The opening's check of the first document, for the linter to adopt."""

    snapshot: Snapshot
    units: UnitCache
    findings: list[Finding]
    published: list[Form]  # the diagnostics sent, as sent


@dataclass
class Opening:
    answered: tuple[Any, Form] | None = None  # the id of `initialize`, and the result sent
    first: FirstCheck | None = None
    projects: Projects | None = None  # the configurations loaded for the first check
    stream: Input | None = None
    ended: float = 0.0  # when the opening ended (time.monotonic)
    # An opening handed over from another process (lsp/handover.py): what it read, and the
    # document versions it dated (`catch_up`).
    taken: bytes = b""
    arrived: dict[tuple[str, int | None], float] | None = None

    @property
    def read(self) -> bytes:
        """Every byte read from stdin, in order: pygls reads them again."""
        return self.taken if self.stream is None else bytes(self.stream.taken)

    def catch_up(self) -> dict[tuple[str, int | None], float]:
        """Read what the editor has sent since the opening ended (pygls reads it again), and
        date each document version opened or changed before now: the end of the opening.
        Their own arrival is unknown (they waited while pygls loaded), and that bound keeps
        what the editor sent in a burst a burst for the debounce (Linter.changed)."""
        if self.stream is None:
            return dict(self.arrived or {})
        self.stream.drain()
        return {key: self.ended for key in self.stream.versions()}

    def handed(self, arrived: dict[tuple[str, int | None], float], *,
               checked: bool = True) -> Opening:
        """The opening as another process takes it over (without the stream; without the
        check and the configurations unless `checked`)."""
        return Opening(answered=self.answered, first=self.first if checked else None,
                       projects=self.projects if checked else None, ended=self.ended,
                       taken=self.read, arrived=arrived)


def begin(stdin: BinaryIO, stdout: BinaryIO, version: str) -> Opening:
    """Read and answer what the opening answers; what pygls must still handle is in `read`.
    Not on Windows, whose pipes cannot be polled (Input.pending)."""
    try:
        fd = stdin.fileno()
    except (OSError, ValueError):  # not a file: pygls reads it all
        return Opening()
    if os.name != "posix":
        return Opening()
    stream = Input(fd)
    opening = Opening(stream=stream)
    try:
        _begin(stream, stdout, version, opening)
    except OSError:  # the editor has gone; pygls finds it out
        logger.info("the editor has gone during the opening", exc_info=True)
    opening.ended = time.monotonic()
    return opening


def _begin(stream: Input, stdout: BinaryIO, version: str, opening: Opening) -> None:
    message = stream.message()
    if message is None or message.get("method") != INITIALIZE or "id" not in message:
        return
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    result = initialize_result(params, version)
    write(stdout, {"jsonrpc": "2.0", "id": message["id"], "result": result})
    opening.answered = message["id"], result
    from cudalint.lsp import checker  # the engine, while the editor reads the answer

    opening.projects = checker.Projects()
    while (message := stream.message()) is not None:
        if message.get("method") in (INITIALIZED, *UNREAD):
            continue
        if message.get("method") == DID_OPEN:
            encoding = result["capabilities"]["positionEncoding"]
            opening.first = _first_check(opening.projects, params, message.get("params"),
                                         encoding, stream, stdout)
        break


def initialize_result(params: Form, version: str) -> Form:
    """The result pygls answers `initialize` with for this server (pygls.capabilities)."""
    client = _at(params, "capabilities")
    sync: Form = {"openClose": True, "change": 2}  # incremental
    synchronization = _at(client, "textDocument", "synchronization")
    for option in ("willSave", "willSaveWaitUntil"):  # announced, not handled: False
        if synchronization.get(option) is not None:
            sync[option] = False
    sync["save"] = True
    capabilities: Form = {"positionEncoding": position_encoding(client),
                          "textDocumentSync": sync}
    if client.get("notebookDocument") is not None:
        capabilities["notebookDocumentSync"] = NOTEBOOK_SYNC
    capabilities.update({
        "codeActionProvider": {"codeActionKinds": CODE_ACTION_KINDS, "resolveProvider": True},
        "executeCommandProvider": {"commands": []},
        "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True},
                      "fileOperations": {}},
    })
    return {"capabilities": capabilities, "serverInfo": {"name": "cudalint", "version": version}}


def position_encoding(client: Form) -> str:
    """The client's first position encoding that pygls speaks; UTF-16 when none is."""
    offered = _at(client, "general").get("positionEncodings")
    for encoding in offered if isinstance(offered, list) else []:
        if encoding in _ENCODINGS:
            return str(encoding)
    return UTF16


def _first_check(projects: Projects, params: Form, opened: Any, encoding: str, stream: Input,
                 stdout: BinaryIO) -> FirstCheck | None:
    """Check the document `didOpen` sent, as the linter would, and publish its diagnostics
    unless the editor has sent more; None where the opening leaves the document to the
    linter (then it has published nothing)."""
    from cudalint.config import ConfigError
    from cudalint.lsp import checker, forms
    from cudalint.lsp.incremental import UnitCache
    from cudalint.lsp.suppress import Noqa

    snapshot = _snapshot(params, opened, encoding)
    if snapshot is None:
        return None
    try:
        project = projects.for_path(snapshot.path, snapshot.roots)
        if project.excludes(snapshot.path, FileKind.PYTHON):
            return None
        if checker.too_large([snapshot.text], project):
            return None  # the linter says it is skipped
        units = UnitCache(checker.fix_names())
        findings = checker.check_python_text(snapshot.path, snapshot.text, project, units)
        noqa = Noqa(snapshot.text, FileKind.PYTHON)
        published = [forms.diagnostic_form(f, noqa, encoding, snapshot.version, actions=False)
                     for f in findings]
    except ConfigError:
        return None  # the linter publishes it
    except Exception:  # the linter's check fails the same way, and says so
        logger.exception("the opening's check of %s failed", snapshot.uri)
        return None
    if stream.pending():  # an edit would make them out of date: the linter checks again
        return None
    write(stdout, {"jsonrpc": "2.0", "method": PUBLISH, "params": {
        "uri": snapshot.uri, "diagnostics": published, "version": snapshot.version}})
    return FirstCheck(snapshot, units, findings, published)


def _snapshot(params: Form, opened: Any, encoding: str) -> Snapshot | None:
    """The linter's snapshot of the opened document (Linter._snapshot, from the messages as
    pygls's workspace holds them); None for a document the opening leaves to the linter."""
    from cudalint.lsp import checker

    document = opened.get("textDocument") if isinstance(opened, dict) else None
    if not isinstance(document, dict):
        return None
    uri, text, version = document.get("uri"), document.get("text"), document.get("version")
    if not (isinstance(uri, str) and isinstance(text, str) and isinstance(version, int)):
        return None
    fs_path = to_fs_path(uri) if uri.partition(":")[0].lower() == "file" else None
    if fs_path is None:
        return None  # not a file: the linter logs why
    path = Path(fs_path).absolute()
    if checker.document_kind(path, document.get("languageId")) is not FileKind.PYTHON:
        return None
    return checker.Snapshot(uri=uri, version=version, text=text, path=path,
                            kind=FileKind.PYTHON, roots=_roots(params), encoding=encoding,
                            generation=0)


def _roots(params: Form) -> tuple[Path, ...]:
    """Linter._roots: the workspace folders, then the root (`rootUri`, else `rootPath`)."""
    folders = params.get("workspaceFolders") or []
    uris = dict.fromkeys(f["uri"] for f in folders if isinstance(f, dict) and "uri" in f)
    root_uri = params.get("rootUri")
    if root_uri is None and params.get("rootPath") is not None:
        root_uri = from_fs_path(params["rootPath"])
    roots = [*(to_fs_path(uri) for uri in uris), to_fs_path(root_uri) if root_uri else None]
    return tuple(Path(root).absolute() for root in roots if root)


def _at(form: Form, *keys: str) -> Form:
    for key in keys:
        found = form.get(key)
        form = found if isinstance(found, dict) else {}
    return form


# --- the transport ------------------------------------------------------------------------
class Input:
    """stdin, read from its file descriptor: the opening then knows whether the editor has
    sent more than it has read. Every byte read is kept, for pygls."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.taken = bytearray()
        self._at = 0  # how much of `taken` the opening has read

    def message(self) -> Form | None:
        """The next message (None: the stream ended, or a message the opening cannot read)."""
        try:
            while (found := _whole(self.taken, self._at)) is None:
                if not self._more():
                    return None
            self._at, body = found
            message = json.loads(body)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None

    def drain(self) -> None:
        """Read what has come, without waiting."""
        while select.select([self.fd], [], [], 0)[0] and self._more():
            pass

    def versions(self) -> list[tuple[str, int | None]]:
        """The document versions opened or changed by the whole messages read."""
        found, at = [], 0
        while (body := _whole_or_none(self.taken, at)) is not None:
            at, data = body
            try:
                message = json.loads(data)
                if message.get("method") in (DID_OPEN, DID_CHANGE):
                    document = message["params"]["textDocument"]
                    found.append((document["uri"], document.get("version")))
            except (ValueError, TypeError, KeyError, AttributeError):
                continue
        return found

    def pending(self) -> bool:
        """Whether the editor has sent more (or closed the stream)."""
        return self._at < len(self.taken) or bool(select.select([self.fd], [], [], 0)[0])

    def _more(self) -> bool:
        chunk = os.read(self.fd, 1 << 16)
        self.taken += chunk
        return bool(chunk)


def _whole_or_none(data: bytearray, at: int) -> tuple[int, bytes] | None:
    try:
        return _whole(data, at)
    except ValueError:
        return None


def _whole(data: bytearray, at: int) -> tuple[int, bytes] | None:
    """The body of the whole message at `at` in `data` and where the next begins; None when
    it has not all come (ValueError: its header gives no length)."""
    end = data.find(_HEADER_END, at)
    if end < 0:
        return None
    length = None
    for line in bytes(data[at:end]).split(b"\r\n"):
        name, _, value = line.decode("ascii", errors="replace").partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            length = int(value)
    if length is None:
        raise ValueError("a message without a Content-Length")
    start = end + len(_HEADER_END)
    if len(data) < start + length:
        return None
    return start + length, bytes(data[start:start + length])


def write(stdout: BinaryIO, message: Form) -> None:
    """Send a message as pygls frames one."""
    body = json.dumps(message).encode("utf-8")
    stdout.write(b"Content-Length: %d\r\nContent-Type: %s\r\n\r\n"
                 % (len(body), _CONTENT_TYPE.encode()) + body)
    stdout.flush()


class Replayed(io.RawIOBase):
    """stdin as pygls reads it: the bytes the opening read, then the rest of the stream."""

    def __init__(self, read: bytes, rest: BinaryIO) -> None:
        super().__init__()
        self._read, self._rest = io.BytesIO(read), rest

    def readable(self) -> bool:
        return True

    def readline(self, size: int | None = -1) -> bytes:
        line = self._read.readline()
        return line if line else self._rest.readline()

    def read(self, size: int | None = -1) -> bytes:
        data = self._read.read(size)
        if size is None or size < 0:
            return data + self._rest.read()
        return data + self._rest.read(size - len(data)) if len(data) < size else data


class Answered(io.RawIOBase):
    """stdout as pygls writes it, less pygls's answer to the `initialize` the opening has
    answered (a difference between the two answers is logged: lsp/opening.py must then say
    what pygls says)."""

    def __init__(self, stdout: BinaryIO, answered: tuple[Any, Form] | None) -> None:
        super().__init__()
        self._out, self._answered = stdout, answered

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self._answered is not None and self._drops(bytes(data)):
            self._answered = None
        else:
            self._out.write(data)
        return len(data)

    def flush(self) -> None:
        self._out.flush()

    def close(self) -> None:
        super().close()  # (flushes)
        self._out.close()

    def _drops(self, data: bytes) -> bool:
        assert self._answered is not None
        ident, sent = self._answered
        try:
            message = json.loads(data.partition(_HEADER_END)[2])
        except ValueError:
            return False
        if not isinstance(message, dict) or "method" in message or message.get("id") != ident:
            return False
        if message.get("result") != sent:
            logger.warning("the answer to initialize was %s; pygls's is %s",
                           json.dumps(sent), json.dumps(message.get("result", message)))
        return True

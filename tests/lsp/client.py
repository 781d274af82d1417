"""A tiny LSP client for tests: Content-Length framing, request ids, deadlines. A server that
hangs fails the test (TimeoutError) instead of hanging the run."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from cudalint.cli import main as cli_main

Message = dict[str, Any]
TIMEOUT = 60.0  # to catch a hung server, not to time a slow one (CI shares cores)


class Client:
    def __init__(self, cwd: Path, stderr: IO[bytes], args: Sequence[str] = (),
                 command: Sequence[str] | None = None) -> None:
        """The server `cudalint lsp ARGS`, or the process `command` starts."""
        self.process = subprocess.Popen(
            list(command) if command else [sys.executable, "-m", "cudalint", "lsp", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd,
        )
        self._next_id = 0
        self._inbox: queue.Queue[Message | None] = queue.Queue()
        self.notifications: list[Message] = []  # received, not yet taken by a wait
        self.published: list[tuple[str, int | None]] = []  # (uri, version) of every diagnostics
        threading.Thread(target=self._read, daemon=True).start()

    # --- sending -------------------------------------------------------------------------
    def send(self, message: Message) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any = None, timeout: float = TIMEOUT) -> Any:
        return self.response(self.ask(method, params), method, timeout)

    def ask(self, method: str, params: Any = None) -> int:
        """Send a request without waiting: its id, for `response`."""
        self._next_id += 1
        self.send({"id": self._next_id, "method": method, "params": params})
        return self._next_id

    def response(self, ident: int, method: str, timeout: float = TIMEOUT) -> Any:
        response = self._wait(lambda m: m.get("id") == ident and "method" not in m, timeout,
                              f"the response to {method}")
        if "error" in response:
            raise AssertionError(f"{method} failed: {response['error']}")
        return response.get("result")

    # --- receiving -----------------------------------------------------------------------
    def diagnostics(self, uri: str, version: int | None = None,
                    timeout: float = TIMEOUT) -> list[Message]:
        """The next diagnostics published for `uri` (for `version`, when given)."""
        def wanted(message: Message) -> bool:
            params = message.get("params") or {}
            return (message.get("method") == "textDocument/publishDiagnostics"
                    and params.get("uri") == uri
                    and (version is None or params.get("version") == version))

        found = self._take(wanted) or self._wait(wanted, timeout, f"diagnostics for {uri}")
        diagnostics: list[Message] = found["params"]["diagnostics"]
        return diagnostics

    def _take(self, wanted: Callable[[Message], bool]) -> Message | None:
        for index, message in enumerate(self.notifications):
            if wanted(message):
                return self.notifications.pop(index)
        return None

    def _wait(self, wanted: Callable[[Message], bool], timeout: float, what: str) -> Message:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = self._inbox.get(timeout=left)
            except queue.Empty:
                break
            if message is None:
                raise AssertionError(f"the server closed its output while waiting for {what}")
            if wanted(message):
                return message
            if "id" in message and "method" in message:  # a request from the server
                self.send({"id": message["id"], "result": None})
            elif "method" in message:
                self.notifications.append(message)
        raise TimeoutError(f"no {what} within {timeout} s")

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while (line := stream.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if not line or length is None:
                self._inbox.put(None)
                return
            message = json.loads(stream.read(length))
            if message.get("method") == "textDocument/publishDiagnostics":
                params = message["params"]
                self.published.append((params["uri"], params.get("version")))
            self._inbox.put(message)

    # --- lifecycle -----------------------------------------------------------------------
    def initialize(self, root: Path, capabilities: Message | None = None,
                   process_id: int | None = None) -> Message:
        result: Message = self.request("initialize", {
            "processId": process_id, "rootUri": root.as_uri(),
            "capabilities": capabilities or {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
        }, timeout=30)
        self.notify("initialized", {})
        return result

    def shutdown(self, timeout: float = TIMEOUT) -> int:
        """shutdown, then exit; the server's exit status."""
        self.request("shutdown", timeout=timeout)
        self.notify("exit")
        return self.process.wait(timeout=timeout)

    def close_input(self) -> None:
        """What an editor's end does to the server: its stdin reaches end of file."""
        assert self.process.stdin is not None
        self.process.stdin.close()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=TIMEOUT)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None and not stream.closed:
                stream.close()


class Document:
    """An open document of the test server, with its version."""

    def __init__(self, server: Client, path: Path, text: str, language: str = "python") -> None:
        self.server, self.path, self.uri, self.text = server, path, path.as_uri(), text
        self.version = 1
        server.notify("textDocument/didOpen", {"textDocument": {
            "uri": self.uri, "languageId": language, "version": 1, "text": text}})

    def diagnostics(self) -> list[dict[str, Any]]:
        return self.server.diagnostics(self.uri, self.version)

    def change(self, text: str) -> list[dict[str, Any]]:
        self.edit(text)
        return self.diagnostics()

    def edit(self, text: str) -> None:
        """Replace the text (a new version) without waiting for its diagnostics."""
        self.version += 1
        self.text = text
        self.server.notify("textDocument/didChange", {
            "textDocument": {"uri": self.uri, "version": self.version},
            "contentChanges": [{"text": text}]})

    def actions(self, diagnostic: dict[str, Any] | None = None,
                only: list[str] | None = None) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.server.response(
            self.ask_actions(diagnostic, only), "textDocument/codeAction")
        return result

    def ask_actions(self, diagnostic: dict[str, Any] | None = None,
                    only: list[str] | None = None) -> int:
        """Request the code actions for `diagnostic` (or at the start of the file) without
        waiting: the request's id."""
        where = diagnostic["range"] if diagnostic else {
            "start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
        context: dict[str, Any] = {"diagnostics": [diagnostic] if diagnostic else []}
        if only is not None:
            context["only"] = only
        return self.server.ask("textDocument/codeAction", {
            "textDocument": {"uri": self.uri}, "range": where, "context": context})

    def apply(self, action: dict[str, Any]) -> str:
        """The buffer after the action's edits (in UTF-16 positions, as the client asked)."""
        edits = action["edit"]["changes"][self.uri]
        return apply_edits(self.text, edits)


def apply_edits(text: str, edits: list[dict[str, Any]]) -> str:
    lines = text.splitlines(keepends=True) or [""]

    def offset(position: dict[str, int]) -> int:
        if position["line"] >= len(lines):
            return len(text)
        line = lines[position["line"]]
        units = 0
        for index, char in enumerate(line):
            if units >= position["character"]:
                return sum(map(len, lines[: position["line"]])) + index
            units += 2 if ord(char) > 0xFFFF else 1
        return sum(map(len, lines[: position["line"]])) + len(line)

    spans = sorted(((offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"])
                    for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def cli_fixed(folder: Path, text: str, *args: str) -> str:
    """What `cudalint check --fix` makes of `text` in a file of `folder`."""
    path = folder / "cli_copy.py"
    path.write_bytes(text.encode())
    cli_main(["check", "--fix", "--quiet", *args, str(path)])
    fixed = path.read_bytes().decode()
    path.unlink()
    return fixed


def long_file(lines: int = 1200) -> str:
    """A file that takes a while to check (long, and mentioning CUDA in prose, so the check
    cannot skip it), with nothing to report."""
    block = (
        "\n\ndef step_{i}(model, batch):\n"
        '    """One step; the caller has moved `batch` to cuda already."""\n'
        '    logger.debug("step %d on cuda", {i})\n'
        "    return model(batch).sum() * {i}\n"
    )
    head = "import logging\n\nlogger = logging.getLogger(__name__)\n"
    return head + "".join(block.format(i=i) for i in range(lines // 6))


@contextlib.contextmanager
def running(root: Path, log: Path, args: Sequence[str] = ()) -> Iterator[Client]:
    """The server `cudalint lsp ARGS`, initialized on `root`, its stderr in `log`; killed at
    the end."""
    with log.open("wb") as stream:
        client = Client(root, stream, args)
        try:
            client.initialize(root)
            yield client
        finally:
            client.kill()

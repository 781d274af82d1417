"""A tiny LSP client for tests: Content-Length framing, request ids, deadlines. A server that
hangs fails the test (TimeoutError) instead of hanging the run."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

Message = dict[str, Any]
TIMEOUT = 20.0  # to catch a hung server, not to time a slow one (CI shares cores)


class Client:
    def __init__(self, cwd: Path, stderr: IO[bytes]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cudalint", "lsp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd,
        )
        self._next_id = 0
        self._inbox: queue.Queue[Message | None] = queue.Queue()
        self.notifications: list[Message] = []  # received, not yet taken by a wait
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
        self._next_id += 1
        ident = self._next_id
        self.send({"id": ident, "method": method, "params": params})
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
            self._inbox.put(json.loads(stream.read(length)))

    # --- lifecycle -----------------------------------------------------------------------
    def initialize(self, root: Path, capabilities: Message | None = None) -> Message:
        result: Message = self.request("initialize", {
            "processId": None, "rootUri": root.as_uri(),
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

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=TIMEOUT)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()

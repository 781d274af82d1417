"""The latest result of each document, by version, and the code actions waiting for one.
Used on the event loop's thread only."""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar

T = TypeVar("T")
Key = tuple[str, int | None]


class Results(Generic[T]):
    def __init__(self) -> None:
        self._latest: dict[str, tuple[int | None, T]] = {}
        self._waiting: dict[Key, list[asyncio.Future[tuple[T] | None]]] = {}

    def get(self, uri: str, version: int | None) -> tuple[T] | None:
        """`(result,)` for that version of the document, None when it is not known yet."""
        found = self._latest.get(uri)
        if found is None or found[0] != version or version is None:
            return None
        return (found[1],)

    def put(self, uri: str, version: int | None, result: T) -> None:
        self._latest[uri] = (version, result)
        for future in self._waiting.pop((uri, version), []):
            if not future.done():
                future.set_result((result,))

    def wait(self, uri: str, version: int | None) -> asyncio.Future[tuple[T] | None]:
        """A future of `(result,)` for that version, or of None once a newer version or a reset
        made it moot."""
        future: asyncio.Future[tuple[T] | None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault((uri, version), []).append(future)
        return future

    def supersede(self, uri: str, version: int | None) -> None:
        """The document is at `version` now: what waits for another version gets None."""
        for key in [k for k in self._waiting if k[0] == uri and k[1] != version]:
            _release(self._waiting.pop(key))

    def forget(self, uri: str) -> None:
        self._latest.pop(uri, None)
        self.supersede(uri, None)
        _release(self._waiting.pop((uri, None), []))

    def clear(self) -> None:
        self._latest.clear()
        for futures in self._waiting.values():
            _release(futures)
        self._waiting.clear()


def _release(futures: list[asyncio.Future[tuple[T] | None]]) -> None:
    for future in futures:
        if not future.done():
            future.set_result(None)

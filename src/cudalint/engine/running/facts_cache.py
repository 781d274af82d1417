"""The cache of the project scan (`engine/project/facts.scan_project`): what each Python file
of a project told the scan, keyed by the file's status, so that a run over one file of a large
project (a pre-commit hook) reads only the files changed since the last run.

One signed index per project root, `facts-<hash of the root>.json` in the lint cache's folder
(`cache._folder`: `.cudalint_cache/` at the root, or CUDALINT_CACHE_DIR), signed with the
user's key as the lint cache's indexes are (a committed cache could otherwise hide a class's
own `cuda` method and make an unsafe fix look safe). It maps each file's absolute path to its
status (`cache.file_status`: size, modification and change times, inode, device) and its facts;
a file whose status is unsettled (changed in the last two seconds) is read every time. Like
the lint cache, it is turned off by `--no-cache` and CUDALINT_NO_CACHE."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import cudalint
from cudalint.engine.project.facts import RootFacts, root_fact_files
from cudalint.engine.running.cache import (
    _SIGNED,
    NO_CACHE_ENV,
    Store,
    _digest,
    _folder,
    _mac,
    _prepare,
    _read_index,
    _write,
    file_status,
    user_key,
)

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from typing import Any, TypeGuard

    from cudalint.engine.project.facts import FileFacts

_FORMAT = 1


class FactsCache:
    """One project's scan index, in the run's own process."""

    __slots__ = ("changed", "files", "index", "store", "writing")

    def __init__(self, store: Store, index: Path, files: dict[str, Any], *,
                 writing: bool = True) -> None:
        self.store = store
        self.index = index
        self.files = files
        self.writing = writing
        self.changed: dict[str, Any] = {}

    @classmethod
    def open(cls, root: Path, *, writing: bool = True) -> FactsCache | None:
        """The scan index of the project at `root`, or None where there can be none (turned
        off, no user key, an unwritable or linked folder: the lint cache says so). Without
        `writing` (a run that fixes, which leaves the cache as it found it, as the lint
        cache does) it is only read."""
        if os.environ.get(NO_CACHE_ENV, "") not in ("", "0"):
            return None
        folder = _folder(root, quiet=True)
        if folder is None:
            return None
        secret = user_key()
        if secret is None:
            return None
        if writing:
            try:
                _prepare(folder)
            except OSError:
                return None
        salt = json.dumps(["facts", _FORMAT, cudalint.__version__, os.path.abspath(root)])
        index = folder / f"facts-{_digest(salt.encode()).hexdigest()[:24]}.json"
        store = Store(folder, salt, secret)
        return cls(store, index, _read_index(index, store), writing=writing)

    def facts(self, path: str, compute: Callable[[str], FileFacts | None]) -> FileFacts | None:
        """The facts of the file at `path` (absolute): from the index when its status is the
        one recorded, else from `compute` (recorded when the file's status is settled)."""
        key = path
        status = file_status(path)
        known = self.files.get(key)
        if status is not None and _well_formed(known) and known[0] == list(status):
            return known[1][0], known[1][1], known[1][2], tuple(known[2])
        found = compute(path)
        if found is not None and status is not None:
            self.changed[key] = [list(status), list(found[:3]), list(found[3])]
        return found

    def root_facts(self, root: Path, compute: Callable[[Path], RootFacts]) -> RootFacts:
        """What the files at the project's root say: from the index when each of those files
        has the status recorded (and no such file came or went), else from `compute`."""
        key = os.path.abspath(root)
        statuses = [[path.name, file_status(path)] for path in root_fact_files(root)]
        known = self.files.get(key)
        if isinstance(known, list) and len(known) == 2 and known[0] == _plain(statuses):
            with contextlib.suppress(ValueError, TypeError, IndexError):
                return RootFacts.from_json(known[1])
        found = compute(root)
        if all(status is not None for _, status in statuses):
            self.changed[key] = [_plain(statuses), found.to_json()]
        return found

    def save(self) -> None:
        """Write the index when this run learnt something, merged with what another run
        saved meanwhile; entries of files that no longer exist are dropped."""
        if not self.changed or not self.writing:
            return
        files = {**self.files, **_read_index(self.index, self.store)}
        files = {path: entry for path, entry in files.items() if os.path.exists(path)}
        files.update(self.changed)
        self.files, self.changed = files, {}
        body = json.dumps({"salt": self.store.salt, "files": files}).encode()[1:]
        with contextlib.suppress(OSError):  # a read-only or full disk costs speed only
            _write(self.index, b"".join((_SIGNED, _mac(body, self.store.secret), b'", ', body)))


def _plain(statuses: list[list[Any]]) -> list[list[Any]]:
    """The statuses as JSON reads them back (lists, not tuples)."""
    return [[name, None if status is None else list(status)] for name, status in statuses]


def _well_formed(entry: object) -> TypeGuard[list[Any]]:
    """An entry as `FactsCache.facts` records it: a status, three flags, extension names."""
    return (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], list)
            and isinstance(entry[1], list) and len(entry[1]) == 3
            and all(isinstance(flag, bool) for flag in entry[1])
            and isinstance(entry[2], list) and all(isinstance(n, str) for n in entry[2]))

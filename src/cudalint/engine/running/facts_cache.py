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
from cudalint.engine.project.facts import RootFacts, TreeFacts, root_fact_files
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
    """One project's scan index, in the run's own process: the per-file index, read only
    when a file's facts are asked for, and the summary (`-summary.json`: the root files'
    facts, and the tree's facts with the signature of the statuses they were read at), which
    is all a run reads when nothing in the project changed."""

    __slots__ = ("_files", "changed", "index", "store", "summary", "summary_changed",
                 "summary_index", "summary_store", "writing")

    def __init__(self, store: Store, index: Path, summary_store: Store, summary_index: Path, *,
                 writing: bool = True) -> None:
        self.store = store
        self.index = index
        self.summary_store = summary_store
        self.summary_index = summary_index
        self.summary: dict[str, Any] = _read_index(summary_index, summary_store)
        self.writing = writing
        self._files: dict[str, Any] | None = None
        self.changed: dict[str, Any] = {}
        self.summary_changed = False

    @property
    def files(self) -> dict[str, Any]:
        if self._files is None:
            self._files = _read_index(self.index, self.store)
        return self._files

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
        name = f"facts-{_digest(salt.encode()).hexdigest()[:24]}"
        return cls(Store(folder, salt, secret), folder / f"{name}.json",
                   Store(folder, f"{salt} summary", secret), folder / f"{name}-summary.json",
                   writing=writing)

    def tree(self, signature: str) -> TreeFacts | None:
        """The tree's facts when its files have the statuses `signature` stands for."""
        known = self.summary.get("tree")
        if not (isinstance(known, list) and len(known) == 2 and known[0] == signature):
            return None
        try:
            own, copies, old, extensions, folders = known[1]
            if not (isinstance(own, bool) and isinstance(old, bool)
                    and all(isinstance(n, str) for n in (*copies, *extensions, *folders))):
                return None
            return TreeFacts(own, frozenset(map(Path, copies)), old, frozenset(extensions),
                             frozenset(folders))
        except (ValueError, TypeError):
            return None

    def put_tree(self, signature: str, tree: TreeFacts) -> None:
        facts = [tree.own_cuda_method, sorted(map(str, tree.helper_copies)), tree.old_torch,
                 sorted(tree.extension_modules), sorted(tree.source_folders)]
        self.summary["tree"] = [signature, facts]
        self.summary_changed = True

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
        statuses = [[path.name, file_status(path)] for path in root_fact_files(root)]
        known = self.summary.get("root")
        if isinstance(known, list) and len(known) == 2 and known[0] == _plain(statuses):
            with contextlib.suppress(ValueError, TypeError, IndexError):
                return RootFacts.from_json(known[1])
        found = compute(root)
        if all(status is not None for _, status in statuses):
            self.summary["root"] = [_plain(statuses), found.to_json()]
            self.summary_changed = True
        return found

    def save(self) -> None:
        """Write the index when this run learnt something, merged with what another run
        saved meanwhile; entries of files that no longer exist are dropped."""
        if not self.writing:
            return
        if self.summary_changed:
            self.summary_changed = False
            _signed_write(self.summary_index, self.summary, self.summary_store)
        if not self.changed:
            return
        files = {**self.files, **_read_index(self.index, self.store)}
        files = {path: entry for path, entry in files.items() if os.path.exists(path)}
        files.update(self.changed)
        self._files, self.changed = files, {}
        _signed_write(self.index, files, self.store)


def _signed_write(index: Path, files: dict[str, Any], store: Store) -> None:
    """An index as `cache._read_index` reads it back: signed with the user's key."""
    body = json.dumps({"salt": store.salt, "files": files}).encode()[1:]
    with contextlib.suppress(OSError):  # a read-only or full disk costs speed only
        _write(index, b"".join((_SIGNED, _mac(body, store.secret), b'", ', body)))


def _plain(statuses: list[list[Any]]) -> list[list[Any]]:
    """The statuses as JSON reads them back (lists, not tuples)."""
    return [[name, None if status is None else list(status)] for name, status in statuses]


def _well_formed(entry: object) -> TypeGuard[list[Any]]:
    """An entry as `FactsCache.facts` records it: a status, three flags, extension names."""
    return (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], list)
            and isinstance(entry[1], list) and len(entry[1]) == 3
            and all(isinstance(flag, bool) for flag in entry[1])
            and isinstance(entry[2], list) and all(isinstance(n, str) for n in entry[2]))

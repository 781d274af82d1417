"""The lint cache, as ruff's: `.cudalint_cache/` at the project root.

One index per configuration, `index-<hash>.json`: the hash is over what every file of a run
shares (cudalint's version and installed files, the rule selection and per-file ignores, the
size limits, whether fix edits are wanted). The index maps each checked file's absolute path
to its last check: the BLAKE2b digest of its content and the key over that, its kind and its
settings (the key of record: a lookup hits only on an equal key), the findings, and the file's
status (size, modification and change times, inode) when it was hashed. A file whose status is
unchanged is not read again: its content is the one hashed. Editing a file sets its change
time (`ctime`) to the current time, and no program can set it back, so an edit that keeps the
size and restores the modification time still shows; a status is recorded only for a file
changed more than `_SETTLED_NS` before it was read, so an edit in the same clock tick as the
read cannot hide either. The text of a file with findings (for source excerpts) is kept apart,
`text/<key>.txt`, and read only for those files.

Everything is JSON (a cache committed by a hostile repository cannot run code) and written
through a temporary file and a rename, so two runs may share the folder: a run that saves the
index merges what another saved meanwhile, and the worst a race costs is a file checked again.
Only lint results are cached, never a `--fix` or `--diff` run.

A cache committed to a repository (or copied from another machine) could hide findings or plant
false ones: each index is signed with a key kept outside every project, in the user's cache
folder (`$XDG_CACHE_HOME/cudalint/key`, else `~/.cache/cudalint/key`, made with mode 0600 on
first use), as keyed BLAKE2b (a MAC: hashlib and hmac load OpenSSL); the keys of entries, and
so the names of their texts, are keyed the same way. An index signed with another key is not
read; an entry of the wrong shape is a miss. Where no key can be kept, a run has no cache.
Nothing is written through a symbolic link: a cache folder that is one, or that a link inside
the project leads to (`.cudalint_cache -> ..`), is not used (one warning line).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from pathlib import Path

import cudalint
from cudalint.files import ReadError, read_regular
from cudalint.finding import Applicability, Edit, Finding, Fix, Position, Severity

try:  # the built-in BLAKE2: importing hashlib loads OpenSSL (5 ms, more than every lookup)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b
from _operator import _compare_digest  # hmac.compare_digest, without hmac's hashlib

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from typing import Any, TypeGuard

    from cudalint.engine.settings import Settings
    from cudalint.kinds import FileKind

FOLDER = ".cudalint_cache"
NO_CACHE_ENV = "CUDALINT_NO_CACHE"
CACHE_DIR_ENV = "CUDALINT_CACHE_DIR"
_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This file is a cache directory tag created by cudalint.\n"
        "# For information about cache directory tags see https://bford.info/cachedir/\n")
_FORMAT = 4  # the layout of an index; another one is simply not found
_SETTLED_NS = 2_000_000_000  # the coarsest file-time granularity (FAT) and a clock skew margin
_KEPT_INDEXES = 8  # configurations kept; the index written longest ago goes first

_KEY_SIZE = 32  # bytes of the user's key
_MOST_CACHED = 1 << 30  # bytes of an index or a kept text: more is no file cudalint wrote
_SIGNED = b'{"mac": "'  # an index opens with its MAC (64 hex digits), then `", ` and the rest
_MAC_END = len(_SIGNED) + 64
_BODY = _MAC_END + 3

Status = tuple[int, int, int, int, int]  # size, mtime_ns, ctime_ns, inode, device


# Plain classes, not dataclasses: a dataclass compiles its methods at import, up to 1 ms each
# in a replayed run's start-up.
class Snapshot:
    """A file's content as the cache knows it, read or vouched for by an unchanged status."""

    __slots__ = ("digest", "facts", "status")

    def __init__(self, digest: str, facts: Any, status: Status | None) -> None:
        self.digest = digest  # BLAKE2b (32 bytes) of the content
        self.facts = facts  # what the caller learnt from the content (JSON): the tree scan's
        self.status = status  # None: changed too recently to stand for the content

    @classmethod
    def of(cls, data: bytes, facts: Any, status: Status | None) -> Snapshot:
        return cls(_digest(data).hexdigest(), facts, status)


class Store:
    """What a worker needs to make an index entry for a file it checked (small, picklable)."""

    __slots__ = ("folder", "salt", "secret")

    def __init__(self, folder: Path, salt: str, secret: bytes) -> None:
        self.folder = folder
        self.salt = salt
        self.secret = secret  # the user's key: signs the index, keys its entries

    def key(self, path: Path, kind: FileKind, settings: Settings, digest: str) -> str:
        head = "\0".join((self.salt, os.path.abspath(path), kind.value, _settings(settings),
                          digest))
        return blake2b(head.encode(), key=self.secret, digest_size=32).hexdigest()

    def entry(self, path: Path, kind: FileKind, settings: Settings, snapshot: Snapshot,
              findings: Sequence[Finding], text: str | None) -> dict[str, Any] | None:
        """The index entry of a check of `snapshot`'s content (its text written beside the
        index when it has findings), or None when it cannot be replayed."""
        if any(f.path != path for f in findings):
            return None  # a finding about another file: not ours to replay
        key = self.key(path, kind, settings, snapshot.digest)
        kept_text = bool(findings) and text is not None
        if kept_text and text is not None:
            try:
                _write(self._text(key), text.encode("utf-8", "surrogatepass"))
            except OSError:
                return None  # a read-only or full disk costs speed, never the run
        return {"key": key, "digest": snapshot.digest, "status": snapshot.status,
                "facts": snapshot.facts, "findings": [_plain(f) for f in findings],
                "text": kept_text}

    def text(self, key: str) -> str:
        """A text kept beside the index; ReadError where it is no regular file (a FIFO, a
        link to /dev/zero: never waited on) or is larger than any file checked."""
        return read_regular(self._text(key), _MOST_CACHED, follow=False).decode(
            "utf-8", "surrogatepass")

    def _text(self, key: str) -> Path:
        return self.folder / "text" / f"{key}.txt"


class Cache:
    """The index of one configuration, in the run's own process."""

    def __init__(self, store: Store, index: Path, files: dict[str, dict[str, Any]]) -> None:
        self.store = store
        self.index = index
        self.files = files
        self.changed: dict[str, dict[str, Any]] = {}
        self._snapshots: dict[Path, Snapshot | None] = {}

    @classmethod
    def open(cls, root: Path, want_edits: bool, selection: object) -> Cache | None:
        """The cache of the project at `root`, or None when it is turned off or unwritable.
        `selection` (JSON) is what picks each file's rules: selectors and per-file ignores."""
        if os.environ.get(NO_CACHE_ENV, "") not in ("", "0"):
            return None
        folder = _folder(root)
        if folder is None:
            return None
        secret = user_key()
        if secret is None:
            return None
        try:
            _prepare(folder)
        except OSError:
            return None
        salt = json.dumps([_FORMAT, cudalint.__version__, _installed_files(), want_edits,
                           selection], default=repr)
        name = _digest(salt.encode()).hexdigest()[:24]
        index = folder / f"index-{name}.json"
        store = Store(folder, salt, secret)
        return cls(store, index, _read_index(index, store))

    def snapshot(self, path: Path, read: Callable[[Path], bytes],
                 facts: Callable[[bytes], Any]) -> Snapshot | None:
        """The file's digest and facts: from the index when its status is unchanged, else
        from `read` (None when that raises: the check reports why). Once per path a run."""
        if path not in self._snapshots:
            self._snapshots[path] = self._take(path, read, facts)
        return self._snapshots[path]

    def _take(self, path: Path, read: Callable[[Path], bytes],
              facts: Callable[[bytes], Any]) -> Snapshot | None:
        known = self.files.get(os.path.abspath(path))
        status = file_status(path)
        if status is not None and _well_formed(known) and _status(known) == status:
            return Snapshot(known["digest"], known["facts"], status)
        from cudalint.engine.reading.reader import ReadError

        try:
            data = read(path)
        except (ReadError, OSError):
            return None
        return Snapshot.of(data, facts(data), status)

    def load(self, path: Path, kind: FileKind, settings: Settings,
             snapshot: Snapshot) -> tuple[list[Finding], str | None] | None:
        """The findings and text of the file's last check, or None when it has none for this
        content, kind and settings (or it is damaged)."""
        entry = self.files.get(os.path.abspath(path))
        if not _well_formed(entry) or entry["key"] != self.store.key(path, kind, settings,
                                                                     snapshot.digest):
            return None
        try:
            findings = [_finding(item, path) for item in entry["findings"]]
            text = self.store.text(entry["key"]) if entry["text"] else None
        except (OSError, ReadError, ValueError, KeyError, TypeError, IndexError):
            return None
        if entry.get("status") != (None if snapshot.status is None else list(snapshot.status)):
            self.put(path, {**entry, "status": snapshot.status})  # now settled: record it
        return findings, text

    def put(self, path: Path, entry: dict[str, Any]) -> None:
        self.changed[os.path.abspath(path)] = entry

    def save(self) -> None:
        """Write the index when this run changed it, merged with what another run saved
        since it was read; entries of files that no longer exist are dropped."""
        if not self.changed:
            return
        files = {**self.files, **_read_index(self.index, self.store)}
        files = {path: entry for path, entry in files.items() if os.path.exists(path)}
        files.update(self.changed)
        body = json.dumps({"salt": self.store.salt, "files": files}).encode()[1:]
        with contextlib.suppress(OSError):  # a read-only or full disk costs speed only
            _write(self.index, b"".join((_SIGNED, _mac(body, self.store.secret), b'", ', body)))
            _forget_old_indexes(self.store.folder)


def file_status(path: Path | str) -> Status | None:
    """The status that stands for a file's content, or None when it was changed too
    recently (or cannot be read): see the module's docstring."""
    now = time.time_ns()
    try:
        s = os.stat(path)
    except OSError:
        return None
    if s.st_ctime_ns > now - _SETTLED_NS or s.st_mtime_ns > now - _SETTLED_NS:
        return None
    return s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino, s.st_dev


def _status(entry: dict[str, Any]) -> Status | None:
    status = entry.get("status")
    return None if status is None else tuple(status)  # type: ignore[return-value]


def _well_formed(entry: object) -> TypeGuard[dict[str, Any]]:
    """Whether an index entry has the shape `Store.entry` gives it (its findings are checked
    as they are replayed): anything else is a miss."""
    if not isinstance(entry, dict):
        return False
    status, facts = entry.get("status"), entry.get("facts")
    return (isinstance(entry.get("key"), str) and isinstance(entry.get("digest"), str)
            and isinstance(entry.get("findings"), list) and isinstance(entry.get("text"), bool)
            and (status is None or (isinstance(status, list) and len(status) == 5
                                    and all(type(n) is int for n in status)))
            and (facts is None or (isinstance(facts, list)
                                   and all(isinstance(f, bool) for f in facts))))


def _read_index(index: Path, store: Store) -> dict[str, dict[str, Any]]:
    """The index's entries, when it is signed with the user's key and made for this salt."""
    try:
        data = read_regular(index, _MOST_CACHED, follow=False)
    except ReadError:
        return {}
    if not (data.startswith(_SIGNED) and data[_MAC_END:_BODY] == b'", '
            and _compare_digest(data[len(_SIGNED):_MAC_END], _mac(data[_BODY:], store.secret))):
        return {}  # another key's (a committed or copied cache), or damaged
    try:
        loaded = json.loads(data)
        if loaded["salt"] == store.salt and isinstance(loaded["files"], dict):
            files: dict[str, dict[str, Any]] = loaded["files"]
            return files
    except (ValueError, KeyError, TypeError, RecursionError):
        pass
    return {}


def _mac(data: bytes, secret: bytes) -> bytes:
    return blake2b(data, key=secret, digest_size=32).hexdigest().encode()


def _folder(root: Path, *, quiet: bool = False) -> Path | None:
    """The cache folder (CUDALINT_CACHE_DIR, else `.cudalint_cache` at the project root),
    resolved; None, with a warning line (unless `quiet`: the lint cache says it), when it is
    a symbolic link or a link inside the project leads to it."""
    named = os.environ.get(CACHE_DIR_ENV)
    real_root = os.path.realpath(root)
    folder = os.path.abspath(named) if named else os.path.join(real_root, FOLDER)
    real = os.path.realpath(folder)
    if real == folder or (named and not os.path.islink(folder)
                          and not _linked_inside(folder, real_root)):
        return Path(real)
    if quiet:
        return None
    sys.stderr.write(f"cudalint: warning: {folder}: the cache folder is a symbolic link or is "
                     "reached through one; checked without the cache\n")
    return None


def _linked_inside(folder: str, root: str) -> bool:
    """Whether the deepest symbolic link on the way to `folder` lies inside `root`."""
    for parent in [folder, *map(str, Path(folder).parents)]:
        if os.path.islink(parent):
            return parent == root or parent.startswith(root + os.sep)
    return False


def user_key() -> bytes | None:
    """This user's key for the cache (made on first use, mode 0600), kept in the user's cache
    folder, outside every project; None when it can be neither read nor made."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG rule: a relative value is ignored
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    path = os.path.join(base, "cudalint", "key")
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        return _new_key(path)
    except OSError:
        return None


def _read_key(path: str) -> bytes:
    """The key in `path`: FileNotFoundError where there is none; another OSError where what is
    there is no key (a link, a FIFO, a device: never waited on)."""
    if not os.path.lexists(path):
        raise FileNotFoundError(path)
    try:
        key = read_regular(path, 64, follow=False)
    except ReadError as error:
        raise OSError(f"{path}: {error}") from None
    if len(key) < _KEY_SIZE:
        raise OSError(f"{path}: a key of {len(key)} bytes")
    return key[:_KEY_SIZE]


def _new_key(path: str) -> bytes:
    """A new key, written whole and then linked in place: two runs making one at the same
    time agree on the first (the other's link fails)."""
    temporary = f"{path}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(os.urandom(_KEY_SIZE))
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
    return _read_key(path)


def _forget_old_indexes(folder: Path) -> None:
    indexes = sorted(folder.glob("index-*.json"), key=lambda p: p.stat().st_mtime_ns)
    for old in indexes[:-_KEPT_INDEXES]:
        old.unlink(missing_ok=True)


def _prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if os.path.islink(folder / "text"):
        raise OSError(f"{folder / 'text'}: a symbolic link")
    tag = folder / "CACHEDIR.TAG"
    if not tag.exists():
        _write(folder / ".gitignore", b"# Created by cudalint automatically.\n*\n")
        _write(tag, _TAG.encode())


def _write(path: Path, data: bytes) -> None:
    """Through a temporary file and a rename: a concurrent run reads the old file or the new
    one, never half of one. No fsync: a damaged entry is only a miss. (Not tempfile, which
    imports shutil and random: a replayed run may record a status.)"""
    path.parent.mkdir(exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@cache
def _installed_files() -> str:
    """A fingerprint of cudalint's own files: an edited rule makes new keys, even when the
    version number stays the same (an editable install)."""
    package = os.path.dirname(cudalint.__file__)
    stamps, folders = [], [package]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir():
                    if entry.name != "__pycache__" and not entry.is_symlink():
                        folders.append(entry.path)
                elif entry.name.endswith((".py", ".toml", ".json")):
                    stat = entry.stat()
                    stamps.append(f"{entry.path[len(package):]}:{stat.st_size}:"
                                  f"{stat.st_mtime_ns}")
    return _digest("\n".join(sorted(stamps)).encode()).hexdigest()


def _digest(data: bytes) -> blake2b:
    return blake2b(data, digest_size=32)


def _settings(settings: Settings) -> str:
    """The settings as JSON, computed once per distinct value (files share them)."""
    return _settings_text(settings.values())


@lru_cache(maxsize=256)
def _settings_text(values: tuple[Any, ...]) -> str:
    return json.dumps([sorted(v) if isinstance(v, frozenset) else v for v in values],
                      default=repr)


def _plain_shape(item: object) -> bool:
    if not isinstance(item, dict):
        return False
    fix, extra, cell = item.get("fix"), item.get("extra"), item.get("cell")
    return (isinstance(item.get("code"), (str, type(None))) and isinstance(item.get("message"), str)
            and _position(item.get("location")) and _position(item.get("end"))
            and type(item.get("severity")) is int and isinstance(item.get("guarded"), bool)
            and (cell is None or type(cell) is int)
            and isinstance(extra, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in extra.items())
            and (fix is None or _fix_shape(fix)))


def _fix_shape(fix: object) -> bool:
    if not isinstance(fix, dict) or not isinstance(fix.get("applicability"), str):
        return False
    edits = fix.get("edits")
    return (isinstance(fix.get("message"), str) and isinstance(edits, list)
            and all(isinstance(e, list) and len(e) == 5 and isinstance(e[0], str)
                    and _position(e[1:3]) and _position(e[3:5]) for e in edits))


def _position(value: object) -> bool:
    return (isinstance(value, list) and len(value) == 2
            and all(type(n) is int for n in value))


def _plain(finding: Finding) -> dict[str, Any]:
    fix = finding.fix
    return {
        "code": finding.code, "message": finding.message,
        "location": [finding.location.row, finding.location.column],
        "end": [finding.end_location.row, finding.end_location.column],
        "severity": finding.severity.value, "guarded": finding.guarded, "cell": finding.cell,
        "extra": finding.extra,
        "fix": None if fix is None else {
            "applicability": fix.applicability.value, "message": fix.message,
            "edits": [[e.content, e.location.row, e.location.column, e.end_location.row,
                       e.end_location.column] for e in fix.edits],
        },
    }


def _finding(item: dict[str, Any], path: Path) -> Finding:
    """The finding of a `_plain` record; ValueError when it is not one."""
    if not _plain_shape(item):
        raise ValueError("not a finding")
    fix = item["fix"]
    return Finding(
        code=item["code"], message=item["message"], path=path,
        location=Position(*item["location"]), end_location=Position(*item["end"]),
        severity=Severity(item["severity"]), guarded=item["guarded"], cell=item["cell"],
        extra=item["extra"],
        fix=None if fix is None else Fix(
            Applicability(fix["applicability"]), fix["message"],
            tuple(Edit(e[0], Position(e[1], e[2]), Position(e[3], e[4])) for e in fix["edits"]),
        ),
    )

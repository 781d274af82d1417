"""The lint cache, as ruff's: `.cudalint_cache/` at the project root, one entry per checked file.

An entry is found by a key over everything that changes a file's findings: its content, path
and kind, cudalint itself (version and installed files), the rules enabled for it, the
settings, and whether fix edits are wanted. Entries are JSON (a cache committed by a hostile
repository cannot run code) and written atomically, so two runs may share the folder.
Only lint results are cached, never a `--fix` or `--diff` run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cudalint
from cudalint.finding import Applicability, Edit, Finding, Fix, Position, Severity

if TYPE_CHECKING:
    from cudalint.engine.settings import Settings
    from cudalint.kinds import FileKind

FOLDER = ".cudalint_cache"
NO_CACHE_ENV = "CUDALINT_NO_CACHE"
CACHE_DIR_ENV = "CUDALINT_CACHE_DIR"
_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This file is a cache directory tag created by cudalint.\n"
        "# For information about cache directory tags see https://bford.info/cachedir/\n")


@dataclass(frozen=True)
class Cache:
    folder: Path
    salt: str  # the part of every key that is the same for the whole run

    @classmethod
    def open(cls, root: Path, want_edits: bool, selection: object) -> Cache | None:
        """The cache of the project at `root`, or None when it is turned off or unwritable.
        `selection` (JSON) is what picks each file's rules: selectors and per-file ignores."""
        if os.environ.get(NO_CACHE_ENV, "") not in ("", "0"):
            return None
        folder = Path(os.environ.get(CACHE_DIR_ENV) or root / FOLDER)
        try:
            _prepare(folder)
        except OSError:
            return None
        salt = json.dumps([cudalint.__version__, _installed_files(), want_edits, selection],
                          default=repr)
        return cls(folder, salt)

    def key(self, path: Path, kind: FileKind, settings: Settings, data: bytes) -> str:
        head = "\0".join((self.salt, os.path.abspath(path), kind.value, _settings(settings)))
        return hashlib.sha256(head.encode() + b"\0" + data).hexdigest()

    def load(self, key: str, path: Path) -> tuple[list[Finding], str | None] | None:
        """The findings and text of an entry, or None when there is none (or it is damaged)."""
        try:
            entry = json.loads(self._entry(key).read_bytes())
            return [_finding(item, path) for item in entry["findings"]], entry["text"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def store(self, key: str, path: Path, findings: Sequence[Finding], text: str | None) -> None:
        if any(f.path != path for f in findings):
            return  # a finding about another file: not ours to replay
        entry = {"findings": [_plain(f) for f in findings], "text": text if findings else None}
        target = self._entry(key)
        try:
            target.parent.mkdir(exist_ok=True)
            _write(target, json.dumps(entry).encode())
        except OSError:
            return  # a read-only or full disk costs speed, never the run

    def _entry(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key[2:]}.json"


def _prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tag = folder / "CACHEDIR.TAG"
    if not tag.exists():
        _write(folder / ".gitignore", b"# Created by cudalint automatically.\n*\n")
        _write(tag, _TAG.encode())


def _write(path: Path, data: bytes) -> None:
    """Through a temporary file and a rename: a concurrent run reads the old entry or the new
    one, never half of one. No fsync: a damaged entry is only a miss."""
    import tempfile  # only when something is stored: a run that only replays writes nothing

    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
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
    stamps = []
    for folder, children, files in os.walk(package):
        children[:] = [child for child in children if child != "__pycache__"]
        for name in files:
            if name.endswith((".py", ".toml", ".json")):
                file = os.path.join(folder, name)
                stat = os.stat(file)
                stamps.append(f"{os.path.relpath(file, package)}:{stat.st_size}:"
                              f"{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(sorted(stamps)).encode()).hexdigest()


def _settings(settings: Settings) -> str:
    """The settings as JSON, computed once per distinct value (files share them)."""
    return _settings_text(tuple(vars(settings).values()))


@lru_cache(maxsize=256)
def _settings_text(values: tuple[Any, ...]) -> str:
    return json.dumps([sorted(v) if isinstance(v, frozenset) else v for v in values],
                      default=repr)


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

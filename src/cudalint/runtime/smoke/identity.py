"""What ties a smoke report to the project it ran on: the schema it follows, the project's name
and commit (and whether the tree was dirty), the hashes of the project files the run used.

`cudalint smoke` writes these fields (`stamp`); `cudalint report` checks a file against them
(`validate`) and compares the run with the project as it is now (`matches`). Standard library
only: the report reads smoke files without torch.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cudalint.config import MAX_CONFIG_SIZE
from cudalint.files import ReadError, chunks, read_text

SCHEMA = "cudalint-smoke/1"
# The fields every smoke report of this schema carries, and their JSON types.
REQUIRED: dict[str, type | tuple[type, ...]] = {
    "schema": str,
    "cudalint": str,
    "date": str,  # ISO 8601, UTC
    "verdict": str,
    "target": str,
    "device": str,
    "environment": dict,
    "checks": list,
    "project": dict,  # {"name", "root", "commit" (str | None), "dirty" (bool | None)}
    "files": dict,  # {path relative to the project root (posix): sha256 hex}
    "tolerance": dict,  # {"rtol", "atol", "source", "per_output": {name: {"rtol", "atol"}}}
    "packages": dict,  # {distribution name: version}
}
VERDICTS = ("pass", "fail")


class NotASmokeReport(ValueError):
    """The data is not a smoke report of a schema this cudalint reads; str() is one line."""


def validate(data: object, source: str) -> dict[str, Any]:
    """`data` when it is a smoke report of SCHEMA, else NotASmokeReport naming `source` and
    the first reason."""
    if not isinstance(data, dict):
        raise NotASmokeReport(f"{source}: not a smoke report (not a JSON object)")
    schema = data.get("schema")
    if schema is None:
        raise NotASmokeReport(f"{source}: not a smoke report (no 'schema'; write one with "
                              "`cudalint smoke ... --json FILE`)")
    if schema != SCHEMA:
        raise NotASmokeReport(f"{source}: smoke report schema {schema!r}, this cudalint reads "
                              f"{SCHEMA!r}")
    for key, kind in REQUIRED.items():
        if key not in data:
            raise NotASmokeReport(f"{source}: not a smoke report (no {key!r})")
        if not isinstance(data[key], kind):
            raise NotASmokeReport(f"{source}: not a smoke report ({key!r} is "
                                  f"{type(data[key]).__name__})")
    if data["verdict"] not in VERDICTS:
        raise NotASmokeReport(f"{source}: not a smoke report (verdict {data['verdict']!r})")
    return data


def project_name(root: Path) -> str:
    """The project's name: [project] name in pyproject.toml, else setup.py's `name=`, else the
    folder's name."""
    pyproject = _read(root / "pyproject.toml")
    if pyproject:
        match = re.search(r'(?ms)^\[project\][^\[]*?^name\s*=\s*["\']([^"\']+)["\']', pyproject)
        if match:
            return match.group(1)
    setup = _read(root / "setup.py")
    if setup:
        match = re.search(r'\bname\s*=\s*["\']([^"\']+)["\']', setup)
        if match:
            return match.group(1)
    return root.resolve().name


def project_state(root: Path) -> dict[str, Any]:
    """The project's name, root, commit and dirtiness (None for both outside a git work tree,
    or without git)."""
    commit = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no") if commit else None
    return {"name": project_name(root), "root": str(root.resolve()), "commit": commit,
            "dirty": None if status is None else bool(status)}


def file_hashes(root: Path, paths: Iterable[Path]) -> dict[str, str]:
    """sha256 of each of `paths` inside `root`, keyed by its posix path relative to `root`
    (paths outside it, and unreadable ones, are left out)."""
    root = root.resolve()
    hashes = {}
    for path in paths:
        try:
            relative = path.resolve().relative_to(root)
            digest = hashlib.sha256()
            for chunk in chunks(path):  # a regular file only: never a FIFO or a device
                digest.update(chunk)
            hashes[relative.as_posix()] = digest.hexdigest()
        except (ValueError, OSError, ReadError):
            continue
    return dict(sorted(hashes.items()))


def matches(data: Mapping[str, Any], root: Path) -> list[str]:
    """Why the smoke report `data` does not describe the project at `root` as it is now: an
    empty list when it does (same name, same commit where both have one, every file it used
    unchanged)."""
    reasons = []
    project = data.get("project") or {}
    now = project_state(root)
    if project.get("name") != now["name"]:
        reasons.append(f"another project ({project.get('name')!r}, this is {now['name']!r})")
    if project.get("commit") and now["commit"] and project["commit"] != now["commit"]:
        reasons.append(f"an older or other commit ({str(project['commit'])[:12]}, now "
                       f"{now['commit'][:12]})")
    for relative, digest in (data.get("files") or {}).items():
        current = file_hashes(root, [root / relative]).get(relative)
        if current is None:
            reasons.append(f"{relative} is gone")
        elif current != digest:
            reasons.append(f"{relative} changed since the run")
    return reasons


def stamp(root: Path, files: Iterable[Path], tolerance: Mapping[str, Any]) -> dict[str, Any]:
    """The identity fields of a smoke report run now on the project at `root`: every REQUIRED
    field but those of the run itself (verdict, target, device, environment, checks). `files`
    are the files the run used (the target's, the project modules it imported); `tolerance` is
    {"rtol", "atol", "source", "per_output"}."""
    import cudalint

    return {
        "schema": SCHEMA,
        "cudalint": cudalint.__version__,
        "date": utc_now(),
        "project": project_state(root),
        "files": file_hashes(root, files),
        "tolerance": dict(tolerance),
        "packages": installed_packages(),
    }


def utc_now() -> str:
    """The time now, ISO 8601 in UTC to the second: 2025-01-31T12:00:00+00:00."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def installed_packages() -> dict[str, str]:
    """Every distribution installed in this environment with its version, by name (the first
    one found on sys.path where two share a name), sorted case-insensitively."""
    found: dict[str, str] = {}
    for distribution in importlib.metadata.distributions():
        name = distribution.metadata["Name"]
        if name and name not in found:
            found[name] = distribution.version
    return dict(sorted(found.items(), key=lambda item: (item[0].lower(), item[0])))


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _read(path: Path) -> str | None:
    return read_text(path, MAX_CONFIG_SIZE)

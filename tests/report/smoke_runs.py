"""Smoke reports for the report's tests, built as `cudalint smoke --json` writes them: valid
against the smoke report schema (`identity.SCHEMA`, every field of `identity.REQUIRED`).

The MPS ones are constructed (emulated): nothing here ran on a Mac. `stamp` adds the identity
fields to a real smoke run's JSON where the harness did not write them (yet)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cudalint import __version__
from cudalint.runtime.smoke import identity

_CHECKS = ("environment", "transfer", "run", "ops", "compare", "determinism", "checkpoint")
# As `cudalint smoke --reference` words a comparison with the demo's reference saved on CUDA.
CUDA_REFERENCE = ("the reference (cuda (NVIDIA H200), torch 2.11.0+cu130, Linux, saved "
                  "2026-11-29T19:15:05+00:00)")
TOLERANCE = {"rtol": 1e-05, "atol": 1e-06, "source": "command line", "per_output": {}}


def smoke_json(device: str = "mps", *, failed: dict[str, str] | None = None,
               skipped: tuple[str, ...] = (), hazards: list[dict[str, Any]] | None = None,
               target: str = "smoke_target.py:train_step", root: Path | None = None,
               name: str | None = None, commit: str | None = None,
               files: dict[str, str] | None = None, against: str | None = None,
               details: dict[str, str] | None = None,
               tolerance: dict[str, Any] | None = None) -> dict[str, Any]:
    """A run on `device`. `root`: the project it ran on (its name, commit and file hashes as
    now, unless `name`, `commit` or `files` say otherwise). `against`: what `compare` compared
    with (CUDA_REFERENCE for the demo's saved reference); `details` overrides checks'
    details."""
    failed = failed or {}
    on_mac = device == "mps"
    origin = against or "the same run on cpu"
    default_details = {"compare": f"all 2 outputs match {origin} within tolerance; largest abs "
                                  "diff 5.07e-07 (logits)"}
    default_details.update(details or {})
    checks = [{"name": name_,
               "status": "fail" if name_ in failed else "skipped" if name_ in skipped else "pass",
               "detail": failed.get(name_) or default_details.get(name_, f"{name_} ok")}
              for name_ in _CHECKS]
    return {
        "schema": identity.SCHEMA,
        "cudalint": __version__,
        "date": "2026-12-01T10:00:00+00:00",
        "verdict": "fail" if failed else "pass",
        "target": target,
        "device": device,
        "environment": {"python": "3.12.4", "os": "Darwin" if on_mac else "Linux",
                        "os_release": "15.1" if on_mac else "6.1", "torch": "2.13.0",
                        "machine": "arm64" if on_mac else "x86_64", "mps_built": on_mac,
                        "cuda_available": device.startswith("cuda"),
                        "mps_available": on_mac, "device": device,
                        "device_name": "Apple M3 Max" if on_mac else "x86_64",
                        "precision": {"default_dtype": "float32", "autocast": []}},
        "checks": checks,
        "hazards": hazards or [],
        "error": None,
        "saved_reference": None,
        "project": _project(root, name, commit),
        "files": files if files is not None else _files(root),
        "tolerance": tolerance if tolerance is not None else dict(TOLERANCE),
        "packages": {"torch": "2.13.0", "numpy": "2.1.0"},
    }


def _project(root: Path | None, name: str | None, commit: str | None) -> dict[str, Any]:
    state = identity.project_state(root) if root is not None else {
        "name": "smoke-test-project", "root": "/nowhere", "commit": None, "dirty": None}
    if name is not None:
        state["name"] = name
    if commit is not None:
        state["commit"] = commit
    return state


def _files(root: Path | None) -> dict[str, str]:
    if root is None:
        return {}
    return identity.file_hashes(root, sorted(root.rglob("*.py")))


def stamp(data: dict[str, Any], root: Path) -> dict[str, Any]:
    """A real smoke run's JSON with the identity fields it lacks, as the harness writes them."""
    fields = {"schema": identity.SCHEMA, "cudalint": __version__,
              "date": "2026-12-01T10:00:00+00:00", "project": identity.project_state(root),
              "files": _files(root), "tolerance": {"rtol": None, "atol": None,
                                                   "source": "default", "per_output": {}},
              "packages": {"torch": "2.13.0"}}
    return {**{key: value for key, value in fields.items() if key not in data}, **data}


def write_smoke(folder: Path, name: str, **kwargs: Any) -> Path:
    path = folder / name
    path.write_text(json.dumps(smoke_json(**kwargs)), encoding="utf-8")
    return path

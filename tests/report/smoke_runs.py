"""Smoke reports for the report's tests, built as `cudalint smoke --json` writes them.

The MPS ones are constructed (emulated): nothing here ran on a Mac."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_CHECKS = ("environment", "transfer", "run", "ops", "compare", "determinism", "checkpoint")


def smoke_json(device: str = "mps", *, failed: dict[str, str] | None = None,
               skipped: tuple[str, ...] = (), hazards: list[dict[str, Any]] | None = None,
               target: str = "smoke_target.py:train_step") -> dict[str, Any]:
    failed = failed or {}
    on_mac = device == "mps"
    checks = [{"name": name,
               "status": "fail" if name in failed else "skipped" if name in skipped else "pass",
               "detail": failed.get(name, f"{name} ok")} for name in _CHECKS]
    return {
        "verdict": "fail" if failed else "pass",
        "target": target,
        "device": device,
        "environment": {"python": "3.12.4", "os": "Darwin" if on_mac else "Linux",
                        "os_release": "15.1" if on_mac else "6.1", "torch": "2.13.0",
                        "machine": "arm64" if on_mac else "x86_64", "mps_built": on_mac,
                        "mps_available": on_mac, "device": device,
                        "device_name": "Apple M3 Max" if on_mac else "x86_64",
                        "precision": {"default_dtype": "float32", "autocast": []}},
        "checks": checks,
        "hazards": hazards or [],
        "error": None,
    }


def write_smoke(folder: Path, name: str, **kwargs: Any) -> Path:
    path = folder / name
    path.write_text(json.dumps(smoke_json(**kwargs)), encoding="utf-8")
    return path

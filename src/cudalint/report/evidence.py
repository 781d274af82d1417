"""The dynamic side of the report: what `cudalint smoke --json` runs showed.

A pass on MPS whose outputs matched the reference within tolerance confirms a verdict; a pass on
the CPU (or CUDA) only shows that the code is portable, not that MPS works; a failed check moves
the decision and is named.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# What a failed smoke check means for the decision, in the guides' words.
CHECK_MEANING = {
    "run": "the target crashed",
    "ops": "an operator is missing on MPS or falls back to the CPU on the hot path",
    "compare": "results differ beyond the tolerance",
    "transfer": "tensors do not survive a trip to the device",
    "determinism": "repeated runs disagree",
    "checkpoint": "checkpoints do not reload",
    "batch-ramp": "no batch size fits in memory",
    "interrupted": "a resumed run diverges from an uninterrupted one",
    "environment": "the environment is unusable",
}


PROTOCOL_CHECKS = ("batch-ramp", "interrupted")


class Evidence(str, enum.Enum):
    PROVISIONAL = "provisional"  # static findings only
    PORTABLE = "portable-on-cpu"  # a smoke pass off MPS: portable code, MPS unproven
    CONFIRMED = "confirmed-on-mps"  # a smoke pass on MPS within tolerance
    SMOKE_FAILED = "smoke-failed"  # a smoke check failed: the decision moved


@dataclass(frozen=True)
class SmokeRun:
    source: str  # the JSON file it came from
    target: str
    device: str  # the device type: mps, cpu, cuda
    passed: bool
    failed: tuple[tuple[str, str], ...] = ()  # (check, detail)
    statuses: dict[str, str] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    predicted: tuple[str, ...] = ()  # hazards predicted for a Mac by a run elsewhere
    environment: dict[str, Any] = field(default_factory=dict)

    @property
    def on_mps(self) -> bool:
        return self.device == "mps"

    @property
    def compared(self) -> bool:
        return self.statuses.get("compare") == "pass"

    def protocol_notes(self) -> list[str]:
        """What the validation protocol's extra checks found, when they did not fail."""
        return [f"smoke {self.target} on {self.device}: {name}: {_short(self.details[name])}"
                for name in PROTOCOL_CHECKS
                if name in self.details and self.statuses.get(name) in ("pass", "warn")]

    def failure(self) -> str:
        named = "; ".join(f"check `{name}` failed ({CHECK_MEANING.get(name, name)}): "
                          f"{_short(detail)}" for name, detail in self.failed)
        return f"smoke {self.target} on {self.device}: {named or 'failed (see its report)'}"


def load_run(path: Path) -> SmokeRun:
    """A `cudalint smoke --json` report; ValueError when the file is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a smoke report: {error}") from error
    if not isinstance(data, dict) or "verdict" not in data:
        raise ValueError(f"{path}: not a smoke report (no 'verdict')")
    return run_from_dict(data, str(path))


def run_from_dict(data: dict[str, Any], source: str) -> SmokeRun:
    checks = [c for c in data.get("checks", []) if isinstance(c, dict)]
    statuses = {str(c.get("name")): str(c.get("status")) for c in checks}
    details = {str(c.get("name")): str(c.get("detail", "")) for c in checks}
    failed = tuple((str(c.get("name")), str(c.get("detail", ""))) for c in checks
                   if c.get("status") == "fail")
    predicted = sorted({str(h.get("subject") or h.get("op") or h.get("dtype") or h.get("kind"))
                        for h in data.get("hazards", []) if isinstance(h, dict)
                        and h.get("predicted", True)})
    return SmokeRun(
        source=source,
        target=str(data.get("target", "the smoke target")),
        device=str(data.get("device", "?")).partition(":")[0],
        passed=data.get("verdict") == "pass",
        failed=failed,
        statuses=statuses,
        details=details,
        predicted=tuple(predicted),
        environment=data.get("environment") or {},
    )


def _short(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."

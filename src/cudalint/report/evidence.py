"""The dynamic side of the report: what `cudalint smoke --json` runs showed.

Every `--smoke` file is validated against the smoke report schema (`identity.validate`): a file
that is not one stops the report. A valid run is then compared with the project as it is now
(`identity.matches`): a run of another project, of another commit or with files changed since
is *stale*: it is shown, with why, and gives no evidence to the decision.

A pass on MPS whose outputs matched the reference within tolerance confirms a verdict; a pass on
the CPU (or CUDA) only shows that the code is portable, not that MPS works; a failed check moves
the decision and is named.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudalint.files import ReadError, read_regular
from cudalint.runtime.smoke import identity

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
    "training": "the training does not train (constant or non-finite loss, zero gradients or "
                "frozen weights)",
    "environment": "the environment is unusable",
}


# A smoke report is read up to this size (its output tail is cut at 2,000 characters): a larger
# file, or one that is no regular file (a FIFO, a device), is no smoke report.
MAX_REPORT_SIZE = 16 * 1024 * 1024
PROTOCOL_CHECKS = ("batch-ramp", "interrupted")
# Said above every list of runs: whose word a run is.
MACHINE_NOTE = ("Each run is reported by the machine that ran it: the machine shown is the "
                "environment smoke recorded there (a file whose environment is missing or "
                "contradicts its device is refused).")

# How the compare check names a saved reference: "the reference (cuda (NVIDIA H200), torch
# 2.11.0+cu130, Linux, saved 2026-11-29T19:15:05+00:00)" (reference.Reference.origin).
_REFERENCE = re.compile(
    r"the reference \((?P<device>[^\s,()]+)(?: \((?P<device_name>[^()]*)\))?, "
    r"torch (?P<torch>[^,]+), (?P<os>[^,]+), saved (?P<saved>[^)]+)\)")
_LARGEST = identity.LARGEST


class Evidence(str, enum.Enum):
    PROVISIONAL = "provisional"  # static findings only
    PORTABLE = "portable-on-cpu"  # a smoke pass off MPS: portable code, MPS unproven
    CONFIRMED = "confirmed-on-mps"  # a smoke pass on MPS within tolerance
    SMOKE_FAILED = "smoke-failed"  # a smoke check failed: the decision moved


@dataclass(frozen=True)
class Comparison:
    """A run's `compare` check against outputs saved elsewhere (a reference file) or against
    the same run on the CPU."""

    status: str  # pass, fail
    against: str  # "reference" or "cpu"
    device: str  # where the reference was saved: cuda, cpu, mps
    device_name: str | None
    torch: str | None
    os: str | None
    saved: str | None
    largest: str | None  # the largest absolute difference, as the check printed it
    output: str | None  # the output it was in
    detail: str

    @property
    def reference(self) -> str:
        """The reference's machine, in words."""
        if self.against == "cpu":
            return "the same run on cpu"
        name = f" ({self.device_name})" if self.device_name else ""
        return (f"{self.device}{name}, torch {self.torch or '?'}, {self.os or '?'}"
                + (f", saved {self.saved}" if self.saved else ""))

    @property
    def difference(self) -> str:
        if self.largest is None:
            return "identical" if self.status == "pass" else "beyond the tolerance (see detail)"
        return f"{self.largest} ({self.output})" if self.output else self.largest

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "against": self.against, "device": self.device,
                "device_name": self.device_name, "torch": self.torch, "os": self.os,
                "saved": self.saved, "largest_abs_diff": self.largest, "output": self.output,
                "detail": self.detail}


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
    date: str | None = None
    cudalint: str | None = None
    project: dict[str, Any] = field(default_factory=dict)
    tolerance: dict[str, Any] = field(default_factory=dict)
    saved_reference: str | None = None
    stale: tuple[str, ...] = ()  # why the run does not describe the project as it is now
    # The training check's steps (`training`: losses, and the reference's) and each compared
    # output's largest difference against its tolerance (`differences`): for the pictures.
    training: dict[str, Any] = field(default_factory=dict)
    differences: tuple[dict[str, Any], ...] = ()
    requested: dict[str, str] = field(default_factory=dict)  # check -> the option that asked

    @property
    def current(self) -> bool:
        return not self.stale

    @property
    def on_mps(self) -> bool:
        return self.device == "mps"

    @property
    def compared(self) -> bool:
        return self.statuses.get("compare") == "pass"

    @property
    def machine(self) -> str:
        """Where the run ran, from its environment."""
        env = self.environment
        system = " ".join(str(env[key]) for key in ("os", "os_release", "machine")
                          if env.get(key))
        name = env.get("device_name")
        parts = [system or "?", f"torch {env.get('torch', '?')}", f"Python "
                 f"{env.get('python', '?')}"]
        if name and name != env.get("machine"):
            parts.insert(0, str(name))
        return ", ".join(parts)

    @property
    def tolerance_text(self) -> str:
        """The rtol and atol applied to each output, with numbers, and their source."""
        from cudalint.runtime.smoke.tolerances import describe

        return describe(self.tolerance, self.differences)

    def comparison(self) -> Comparison | None:
        """The compare check, when it compared (passed or failed) with something."""
        status = self.statuses.get("compare")
        if status not in ("pass", "fail"):
            return None
        detail = self.details.get("compare", "")
        largest = _LARGEST.search(detail)
        found = _REFERENCE.search(detail)
        if found is None:
            return Comparison(status, "cpu", "cpu", None, self.environment.get("torch"),
                              self.environment.get("os"), None,
                              largest["value"] if largest else None,
                              largest["output"] if largest else None, detail)
        return Comparison(status, "reference", found["device"], found["device_name"],
                          found["torch"], found["os"], found["saved"],
                          largest["value"] if largest else None,
                          largest["output"] if largest else None, detail)

    def protocol_notes(self) -> list[str]:
        """What the validation protocol's extra checks found, when they did not fail."""
        return [f"smoke {self.target} on {self.device}: {name}: {_short(self.details[name])}"
                for name in PROTOCOL_CHECKS
                if name in self.details and self.statuses.get(name) in ("pass", "warn")]

    def failure(self) -> str:
        named = "; ".join(f"check `{name}` failed ({CHECK_MEANING.get(name, name)}): "
                          f"{_short(detail)}" for name, detail in self.failed)
        return f"smoke {self.target} on {self.device}: {named or 'failed (see its report)'}"

    def to_dict(self) -> dict[str, Any]:
        comparison = self.comparison()
        return {"source": self.source, "target": self.target, "device": self.device,
                "passed": self.passed, "current": self.current, "stale": list(self.stale),
                "date": self.date, "cudalint": self.cudalint, "machine": self.machine,
                "project": self.project, "tolerance": self.tolerance,
                "comparison": comparison.to_dict() if comparison else None}


def load_run(path: Path, root: Path | None = None) -> SmokeRun:
    """A `cudalint smoke --json` report, compared with the project at `root` when given;
    ValueError (identity.NotASmokeReport, one line) when the file is not one."""
    try:
        data = json.loads(read_regular(path, MAX_REPORT_SIZE).decode("utf-8"))
    except (ReadError, ValueError, RecursionError) as error:  # ValueError: bad UTF-8 or JSON
        reason = str(error).splitlines()[0]
        raise identity.NotASmokeReport(f"{path}: not a smoke report: {reason}") from error
    data = identity.validate(data, str(path))
    stale = tuple(identity.matches(data, root)) if root is not None else ()
    return run_from_dict(data, str(path), stale)


def run_from_dict(data: dict[str, Any], source: str, stale: tuple[str, ...] = ()) -> SmokeRun:
    checks = [c for c in data.get("checks", []) if isinstance(c, dict)]
    statuses = {str(c.get("name")): str(c.get("status")) for c in checks}
    details = {str(c.get("name")): str(c.get("detail", "")) for c in checks}
    failed = tuple((str(c.get("name")), str(c.get("detail", ""))) for c in checks
                   if c.get("status") == "fail")
    # What the run itself predicted: a hazard with a count of 0 is a static finding the run did
    # not reach (the audit has it already).
    predicted = sorted({str(h.get("subject") or h.get("op") or h.get("dtype") or h.get("kind"))
                        for h in data.get("hazards", []) if isinstance(h, dict)
                        and h.get("predicted", True) and h.get("count") != 0})
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
        date=data.get("date"),
        cudalint=data.get("cudalint"),
        project=data.get("project") or {},
        tolerance=data.get("tolerance") or {},
        saved_reference=data.get("saved_reference"),
        stale=stale,
        training=data["training"] if isinstance(data.get("training"), dict) else {},
        differences=tuple(item for item in data.get("differences") or ()
                          if isinstance(item, dict)),
        requested={str(k): str(v) for k, v in (data.get("requested") or {}).items()}
        if isinstance(data.get("requested"), dict) else {},
    )


def _short(text: str) -> str:
    """The first line, whole."""
    return text.strip().splitlines()[0] if text.strip() else ""

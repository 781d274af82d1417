"""What a smoke run found: checks, hazards, op counts and the environment."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

# Sections only some runs have: the training check's steps, each compared output's largest
# difference against the tolerance applied to it, the count of static findings out of the
# target's reach, the batch-size ramp, the interrupted run, the killed run, the
# target's output, the files it wrote and named, the fallback pair of a Mac.
EXTRA_SECTIONS = ("training", "differences", "elsewhere", "batches", "interrupted", "killed",
                  "output", "artefacts", "fallback_pair")
# What ties the report to its project and run (identity.REQUIRED, less the run's own fields):
# the first three lead the JSON, the others follow the run's sections.
IDENTITY_HEAD = ("schema", "cudalint", "date")
IDENTITY_TAIL = ("project", "files", "tolerance", "packages")
# Every check smoke writes, by name (a report naming another was not written by smoke; a test
# holds this list to the names the harness's Check(...) calls use).
CHECK_NAMES = ("environment", "transfer", "run", "ops", "training", "compare", "determinism",
               "checkpoint", "batch-ramp", "interrupted", "killed")


class Status(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    SKIPPED = "skipped"


class Severity(str, enum.Enum):
    ERROR = "error"  # fails the verdict
    WARNING = "warning"


class HazardKind(str, enum.Enum):
    CPU_FALLBACK = "cpu-fallback"  # an op ran through MPS's CPU fallback
    NO_MPS_KERNEL = "no-mps-kernel"  # an op MPS has no kernel for
    DTYPE = "unsupported-dtype"  # float64, complex128, ... which MPS cannot hold
    CPU_OP = "cpu-op"  # an op ran on CPU while the target device is an accelerator
    MIXED_DEVICE = "mixed-device"  # an op took tensors on two devices
    PIN_MEMORY = "pin-memory"


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str


@dataclass(frozen=True)
class Hazard:
    """Something that breaks or slows the target on a Mac. `predicted` when inferred from a run
    elsewhere (CPU, CUDA) rather than seen on MPS."""

    kind: HazardKind
    severity: Severity
    detail: str
    op: str | None = None
    dtype: str | None = None
    predicted: bool = False
    count: int = 1
    # Where in the project: the line of the run's first such op (`model.py:35: `code``), and
    # the lines `cudalint check` found (`model.py:35 (CUD602)`).
    where: tuple[str, ...] = ()

    @property
    def subject(self) -> str:
        return self.op or self.dtype or self.kind.value


@dataclass
class OpSummary:
    counts: dict[str, int] = field(default_factory=dict)
    devices: dict[str, list[str]] = field(default_factory=dict)
    fallbacks: list[str] = field(default_factory=list)
    without_mps_kernel: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class SmokeReport:
    target: str
    device: str
    environment: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    hazards: list[Hazard] = field(default_factory=list)
    ops: OpSummary = field(default_factory=OpSummary)
    warnings: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None
    saved_reference: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # EXTRA_SECTIONS that ran
    # identity.stamp(...): schema, cudalint, date, project, files, tolerance, packages
    identity: dict[str, Any] = field(default_factory=dict)
    # The checks the command line asked for, by check name: {"killed": "--kill-after 1"}
    requested: dict[str, str] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        failed = any(check.status is Status.FAIL for check in self.checks)
        return "fail" if failed or self.unmet else "pass"

    @property
    def unmet(self) -> list[tuple[str, str]]:
        """Each check asked for and not carried out: (the option as given, why)."""
        ran = {check.name: check for check in self.checks}
        unmet = []
        for name, option in self.requested.items():
            check = ran.get(name)
            if check is None or check.status is Status.SKIPPED:
                unmet.append((option, check.detail if check else f"no `{name}` check ran"))
        return unmet

    @property
    def exit_code(self) -> int:
        """0 pass; 1 a check failed; 2 a check asked for was not carried out (and none
        failed: a failure, a crash included, says more)."""
        if any(check.status is Status.FAIL for check in self.checks):
            return 1
        return 2 if self.unmet else 0

    def to_dict(self) -> dict[str, Any]:
        from cudalint.runtime.smoke.identity import SCHEMA

        head = {"schema": SCHEMA, **{key: self.identity[key] for key in IDENTITY_HEAD
                                     if key in self.identity}}
        return {
            **head,
            "verdict": self.verdict,
            "target": self.target,
            "device": self.device,
            "environment": self.environment,
            "checks": [asdict(check) | {"status": check.status.value} for check in self.checks],
            "hazards": [_hazard_dict(hazard) for hazard in self.hazards],
            "ops": {
                "total": self.ops.total,
                "counts": self.ops.counts,
                "devices": self.ops.devices,
                "fallbacks": self.ops.fallbacks,
                "without_mps_kernel": self.ops.without_mps_kernel,
            },
            "warnings": self.warnings,
            "error": self.error,
            "saved_reference": self.saved_reference,
            "requested": self.requested,
            **self.extra,
            **{key: self.identity[key] for key in IDENTITY_TAIL if key in self.identity},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SmokeReport:
        """The report a child process wrote with `to_dict`."""
        ops = data.get("ops") or {}
        return cls(
            target=data["target"],
            device=data["device"],
            environment=data.get("environment") or {},
            checks=[Check(c["name"], Status(c["status"]), c["detail"]) for c in data["checks"]],
            hazards=[_hazard(h) for h in data.get("hazards", [])],
            ops=OpSummary(ops.get("counts", {}), ops.get("devices", {}),
                          ops.get("fallbacks", []), ops.get("without_mps_kernel", [])),
            warnings=data.get("warnings", []),
            error=data.get("error"),
            saved_reference=data.get("saved_reference"),
            extra={key: data[key] for key in EXTRA_SECTIONS if key in data},
            requested=dict(data.get("requested") or {}),
            identity={key: data[key] for key in (*IDENTITY_HEAD, *IDENTITY_TAIL)
                      if key in data},
        )


def _hazard(data: dict[str, Any]) -> Hazard:
    return Hazard(HazardKind(data["kind"]), Severity(data["severity"]), data["detail"],
                  op=data.get("op"), dtype=data.get("dtype"), predicted=data["predicted"],
                  count=data["count"], where=tuple(data.get("where", ())))


def _hazard_dict(hazard: Hazard) -> dict[str, Any]:
    return {
        "kind": hazard.kind.value,
        "severity": hazard.severity.value,
        "subject": hazard.subject,
        "op": hazard.op,
        "dtype": hazard.dtype,
        "predicted": hazard.predicted,
        "count": hazard.count,
        "detail": hazard.detail,
        "where": list(hazard.where),
    }

"""The decision: can this project move to a Mac, and how.

- **MPS ready**: nothing on the main code path needs CUDA once the safe fixes are applied, and
  every smoke run given passed.
- **dual-track**: develop on the Mac, keep CUDA for heavy work: what still needs CUDA is
  guarded or optional, is tooling (pins, containers, cluster scripts), is code a person must
  port, or a smoke run predicted hazards (CPU fallbacks, float64).
- **MPS refused**: the main code path needs native CUDA code or a CUDA-only library that has
  no guard, or a smoke run failed on MPS.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cudalint.finding import Category, Finding
from cudalint.output.paths import display_path

# Families whose blockers on the main path mean the code itself needs CUDA-only native code.
_NATIVE = ("CUD2", "CUD3")
# Families about the environment around the code: they keep a CUDA track, not block the Mac.
_TOOLING = ("CUD4", "CUD5")


class Verdict(str, enum.Enum):
    READY = "mps-ready"
    DUAL_TRACK = "dual-track"
    REFUSED = "mps-refused"


@dataclass
class Decision:
    verdict: Verdict
    reasons: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict.value, "reasons": self.reasons, "counts": self.counts}


def decide(findings: Iterable[Finding], smoke_runs: Sequence[dict[str, Any]] = ()) -> Decision:
    findings = list(findings)
    counts = {category.value: 0 for category in Category}
    for finding in findings:
        counts[finding.category.value] += 1
    refused, dual = _from_findings(findings)
    smoke_refused, smoke_dual = _from_smoke(smoke_runs)
    refused += smoke_refused
    dual += smoke_dual
    if refused:
        return Decision(Verdict.REFUSED, refused + dual, counts)
    if dual:
        return Decision(Verdict.DUAL_TRACK, dual, counts)
    reasons = [f"{counts['fixable']} finding(s) are fixed by `cudalint check --fix`"] \
        if counts["fixable"] else ["nothing ties the code to CUDA"]
    return Decision(Verdict.READY, reasons, counts)


def _where(finding: Finding) -> str:
    return f"{display_path(finding.path)}:{finding.location.row} {finding.code}"


def _from_findings(findings: list[Finding]) -> tuple[list[str], list[str]]:
    refused: list[str] = []
    dual: list[str] = []
    for finding in findings:
        code = finding.code or ""
        if finding.category is Category.BLOCKER and code.startswith(_NATIVE):
            refused.append(f"{_where(finding)}: {finding.message}")
        elif finding.category is Category.BLOCKER and code.startswith(_TOOLING):
            dual.append(f"{_where(finding)}: CUDA tooling stays on the CUDA track")
        elif finding.category is Category.BLOCKER:
            dual.append(f"{_where(finding)}: to port by hand: {finding.message}")
        elif finding.category is Category.GUARDED and code.startswith(_NATIVE):
            dual.append(f"{_where(finding)}: optional CUDA path: {finding.message}")
    return refused, dual


def _from_smoke(runs: Sequence[dict[str, Any]]) -> tuple[list[str], list[str]]:
    refused: list[str] = []
    dual: list[str] = []
    for run in runs:
        device = str(run.get("device", "?"))
        name = run.get("target", "smoke run")
        if run.get("verdict") != "pass":
            failed = [c["name"] for c in run.get("checks", []) if c.get("status") == "fail"]
            reason = f"{name} failed on {device} ({', '.join(failed) or 'see its report'})"
            (refused if device.startswith("mps") else dual).append(reason)
            continue
        hazards = [str(h.get("op") or h.get("dtype") or h.get("name") or h)
                   for h in run.get("hazards", [])]
        if hazards:
            dual.append(f"{name} passed on {device} with predicted MPS hazards: "
                        f"{', '.join(sorted(set(hazards)))}")
    return refused, dual

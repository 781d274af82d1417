"""The static side of a run's hazards: what `cudalint check`'s CUD6 rules find in the files the
run used, each with its file:line. A finding of the kind of a hazard the run showed adds its
line to that hazard's `where`; one the run did not reach (a branch it did not take) becomes a
predicted hazard of its own, with a count of 0. The check itself is handed in by the command
(`cudalint.commands.smoke`): the smoke harness sits below the linter and never imports it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from cudalint.runtime.smoke.report import Hazard, HazardKind, Severity


@dataclass(frozen=True)
class StaticFinding:
    code: str  # CUD601, CUD602, CUD603
    where: str  # file:line from the project's root
    message: str

    @property
    def label(self) -> str:
        return f"{self.where} ({self.code})"


# (project root, the files the run used) -> the CUD6 findings in them
StaticCheck = Callable[[Path, list[Path]], list[StaticFinding]]

_KINDS = {"CUD601": (HazardKind.DTYPE,),
          "CUD602": (HazardKind.NO_MPS_KERNEL, HazardKind.CPU_FALLBACK),
          "CUD603": (HazardKind.PIN_MEMORY,)}
_OP = re.compile(r"`(aten::[\w.]+)`")


def with_static(hazards: list[Hazard], findings: list[StaticFinding]) -> list[Hazard]:
    located, reached = [], set()
    for hazard in hazards:
        matched = [finding for finding in findings if _matches(finding, hazard)]
        reached.update(matched)
        labels = tuple(finding.label for finding in matched if finding.label not in hazard.where)
        located.append(replace(hazard, where=hazard.where + labels) if labels else hazard)
    return located + [_unreached(finding) for finding in findings
                      if finding not in reached and finding.code in _KINDS]


def _matches(finding: StaticFinding, hazard: Hazard) -> bool:
    if hazard.kind not in _KINDS.get(finding.code, ()):
        return False
    if finding.code == "CUD602":
        return hazard.op is not None and hazard.op in _OP.findall(finding.message)
    if finding.code == "CUD601":
        return hazard.dtype is not None and hazard.dtype in finding.message
    return True


def _unreached(finding: StaticFinding) -> Hazard:
    ops = _OP.findall(finding.message)
    return Hazard(_KINDS[finding.code][0], Severity.WARNING,
                  f"{finding.message} (cudalint check {finding.code}; this run did not reach it)",
                  op=ops[0] if ops else None, predicted=True, count=0, where=(finding.label,))

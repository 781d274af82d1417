"""The decision a lab can act on, as the migration guides write it, with its evidence.

- **Mac allowed**: after `cudalint check --fix`, nothing on the main path needs CUDA, and no
  smoke run failed.
- **dual-track**: the Mac for prototyping, integration, inference checks and macOS regressions;
  Linux stays the reference for heavy or distributed training. When what needs CUDA is only on
  distributed-only paths or in tooling, this reads "Mac allowed for single-device work, CUDA for
  distributed training". Work left by hand on the main path, a smoke failure off MPS, or
  hazards a CPU run predicts for a Mac also make it.
- **MPS refused**: the main path needs native CUDA code or a CUDA-only library without a
  guard, or a smoke check failed on MPS.

The evidence level says what the verdict rests on: static findings (*provisional*, with the
smoke command that would confirm it), a CPU smoke pass (*portable*, not proof that MPS works),
an MPS smoke pass within tolerance (*confirmed*), or a failed smoke check (*smoke-failed*).
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cudalint.report.audit import Audit, Effort, Item
from cudalint.report.checklist import ChecklistItem, build_checklist
from cudalint.report.evidence import Evidence, SmokeRun
from cudalint.report.paths import PathClass

SINGLE_DEVICE = "Mac allowed for single-device work, CUDA for distributed training"
_HEADLINES = {
    "mac-allowed": "Mac allowed",
    "dual-track": "dual-track: the Mac for prototyping, integration, inference checks and "
                  "macOS regressions; Linux/CUDA stays the reference for heavy or distributed "
                  "training",
    "mps-refused": "MPS refused",
}
_SIDE_PATHS = (PathClass.DISTRIBUTED, PathClass.TOOLING)
_WORK = (Effort.BLOCKER, Effort.BY_HAND)
_SIDE_LABELS = {PathClass.DISTRIBUTED: "distributed-only path, CUDA stays for it",
                PathClass.TOOLING: "tooling, not the code's main path"}


class Verdict(str, enum.Enum):
    MAC_ALLOWED = "mac-allowed"
    DUAL_TRACK = "dual-track"
    REFUSED = "mps-refused"


@dataclass(frozen=True)
class Reason:
    text: str
    where: str | None = None  # file:line, or the smoke report's file
    code: str | None = None

    def __str__(self) -> str:
        head = " ".join(part for part in (self.where, self.code) if part)
        return f"{head}: {self.text}" if head else self.text

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "where": self.where, "code": self.code}


@dataclass
class Decision:
    verdict: Verdict
    evidence: Evidence
    evidence_note: str
    confirm: str | None  # the command that would confirm or firm up the verdict
    scope: str | None = None  # SINGLE_DEVICE when only distributed/tooling paths need CUDA
    reasons: list[Reason] = field(default_factory=list)
    notes: list[Reason] = field(default_factory=list)
    audit: Audit = field(default_factory=lambda: Audit(()))
    checklist: list[ChecklistItem] = field(default_factory=list)
    runs: tuple[SmokeRun, ...] = ()

    @property
    def headline(self) -> str:
        if self.verdict is Verdict.DUAL_TRACK and self.scope:
            return f"dual-track: {self.scope}"
        return _HEADLINES[self.verdict.value]

    @property
    def effort(self) -> dict[str, int]:
        return {effort.value: self.audit.count(effort) for effort in Effort}

    @property
    def paths(self) -> dict[str, dict[str, int]]:
        counts = {path.value: Counter[str]() for path in PathClass}
        for item in self.audit.items:
            counts[item.path.value][item.effort.value] += 1
        return {path: {"total": sum(c.values()), **dict(c)} for path, c in counts.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "headline": self.headline,
            "scope": self.scope,
            "evidence": self.evidence.value,
            "evidence_note": self.evidence_note,
            "confirm": self.confirm,
            "reasons": [reason.to_dict() for reason in self.reasons],
            "notes": [note.to_dict() for note in self.notes],
            "fixes": {"fix": self.audit.count(Effort.FIXABLE),
                      "unsafe_fixes": self.audit.count(Effort.UNSAFE_FIXABLE)},
            "effort": self.effort,
            "paths": self.paths,
            "families": dict(sorted(Counter(item.family for item in self.audit.items).items())),
            "checklist": [item.to_dict() for item in self.checklist],
            "smoke": [{"source": run.source, "target": run.target, "device": run.device,
                       "passed": run.passed} for run in self.runs],
            "findings": [item.to_dict() for item in self.audit.items],
        }


def decide(audit: Audit, runs: Sequence[SmokeRun] = (), target: str | None = None) -> Decision:
    """`target`: the smoke TARGET to suggest when no run names one."""
    runs = tuple(runs)
    blockers = [i for i in audit.items if i.path is PathClass.MAIN and i.effort is Effort.BLOCKER]
    by_hand = [i for i in audit.items if i.path is PathClass.MAIN and i.effort is Effort.BY_HAND]
    side = [i for i in audit.items if i.path in _SIDE_PATHS and i.effort in _WORK]
    failed_mps = [run for run in runs if not run.passed and run.on_mps]
    failed_off = [run for run in runs if not run.passed and not run.on_mps]
    predicted = [run for run in runs if run.passed and not run.on_mps and run.predicted]
    reasons = ([_finding_reason(i, "native CUDA on the main path") for i in blockers]
               + [Reason(run.failure(), run.source) for run in failed_mps + failed_off]
               + [_finding_reason(i, "to port by hand") for i in by_hand]
               + [_hazard_reason(run) for run in predicted]
               + [_finding_reason(i, _SIDE_LABELS[i.path]) for i in side])
    scope = None
    if blockers or failed_mps:
        verdict = Verdict.REFUSED
    elif by_hand or failed_off or predicted:
        verdict = Verdict.DUAL_TRACK
    elif side:
        verdict, scope = Verdict.DUAL_TRACK, SINGLE_DEVICE
    else:
        verdict = Verdict.MAC_ALLOWED
        reasons = [_allowed_reason(audit)]
    command = _confirm_command(runs, target)
    evidence, note = _evidence(verdict, runs, bool(blockers), command)
    notes = _notes(audit) + [Reason(text, run.source) for run in runs
                             for text in run.protocol_notes()]
    return Decision(verdict, evidence, note, command, scope, reasons, notes, audit,
                    build_checklist(audit, runs), runs)


def _finding_reason(item: Item, label: str) -> Reason:
    return Reason(f"{label}: {item.finding.message}", item.where, item.finding.code)


def _hazard_reason(run: SmokeRun) -> Reason:
    return Reason(f"smoke {run.target} passed on {run.device} but predicts MPS hazards: "
                  f"{', '.join(run.predicted)}", run.source)


def _allowed_reason(audit: Audit) -> Reason:
    fixable = audit.count(Effort.FIXABLE)
    unsafe = audit.count(Effort.UNSAFE_FIXABLE)
    if not fixable and not unsafe:
        return Reason("nothing on the main path needs CUDA")
    parts = [f"{fixable} finding(s) removed by `cudalint check --fix`"] if fixable else []
    if unsafe:
        parts.append(f"{unsafe} more by `--unsafe-fixes` (review that diff)")
    return Reason("nothing on the main path needs CUDA once the fixes are applied: "
                  + "; ".join(parts))


def _notes(audit: Audit) -> list[Reason]:
    notes = [_finding_reason(i, "removed by `--unsafe-fixes` (review the diff)")
             for i in audit.with_effort(Effort.UNSAFE_FIXABLE)]
    notes += [_finding_reason(i, "guarded: runs without CUDA")
              for i in audit.with_effort(Effort.GUARDED) if i.path is not PathClass.DISTRIBUTED]
    return notes


def _confirm_command(runs: tuple[SmokeRun, ...], target: str | None) -> str:
    named = next((run.target for run in runs), None) or target or "path/to/file.py:function"
    return f"cudalint smoke {named} --device mps --json smoke-mps.json  (on a Mac)"


def _evidence(verdict: Verdict, runs: tuple[SmokeRun, ...], static_refusal: bool,
              command: str) -> tuple[Evidence, str]:
    failed = [run for run in runs if not run.passed]
    if failed:
        return Evidence.SMOKE_FAILED, "; ".join(run.failure() for run in failed)
    if verdict is Verdict.REFUSED and static_refusal:
        return Evidence.PROVISIONAL, ("from the static findings: the main path needs native "
                                      "CUDA; a smoke run that reaches it on a Mac would show "
                                      f"the failure: {command}")
    confirmed = [run for run in runs if run.on_mps and run.compared]
    if confirmed:
        run = confirmed[0]
        env = run.environment
        return Evidence.CONFIRMED, (
            f"smoke {run.target} passed on MPS with outputs within tolerance "
            f"(torch {env.get('torch', '?')}, {env.get('os', '?')} {env.get('os_release', '')}, "
            f"{env.get('device_name') or env.get('machine', '?')}; {run.source})")
    if runs:
        ran = ", ".join(sorted({run.device for run in runs}))
        return Evidence.PORTABLE, (
            f"smoke passed on {ran}, not compared on MPS: this shows the code is portable, "
            f"not that MPS works; confirm: {command}")
    return Evidence.PROVISIONAL, f"from the static findings only; confirm: {command}"

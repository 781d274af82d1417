"""The decision a lab can act on, as the migration guides write it, with its evidence.

- **Mac allowed**: after `cudalint check --fix`, nothing on the main path needs CUDA, and no
  smoke run failed.
- **dual-track**: the Mac for prototyping, integration, inference checks and macOS regressions;
  Linux stays the reference for heavy or distributed training. When what needs CUDA is only on
  distributed-only paths or in tooling, this reads "Mac allowed for single-device work, CUDA for
  distributed training" when a distributed-only path needs CUDA, "Mac allowed for the code; CUDA
  stays in the tooling" when only pins, containers and cluster scripts do. Work left by hand on
  the main path, a smoke failure off MPS, or hazards a CPU run predicts for a Mac also make it.
- **MPS refused**: the main path needs native CUDA code or a CUDA-only library without a
  guard, or a smoke check failed on MPS.

The evidence level says what the verdict rests on: static findings (*provisional*, with the
smoke command that would confirm it), a CPU smoke pass (*portable*, not proof that MPS works),
an MPS smoke pass within tolerance (*confirmed*; an MPS pass that compared no outputs is only
*portable*), or a failed smoke check (*smoke-failed*).
Only smoke runs that describe the project as it is now are evidence; stale ones are shown, with
why, and never used. A decision on a project with fixable findings holds after
`cudalint check --fix`, and says so.
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
from cudalint.report.project import Project, unknown_project
from cudalint.report.tested import Tested, what_was_tested
from cudalint.runtime.smoke.scaffold.init import DEFAULT_NAME as INIT_FILE
from cudalint.runtime.smoke.scaffold.init import INIT_TARGET

SINGLE_DEVICE = "Mac allowed for single-device work, CUDA for distributed training"
TOOLING_ONLY = ("Mac allowed for the code; CUDA stays in the tooling (pins, containers, CI and "
                "cluster scripts)")
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
    scope: str | None = None  # SINGLE_DEVICE or TOOLING_ONLY: what needs CUDA is off the main path
    reasons: list[Reason] = field(default_factory=list)
    notes: list[Reason] = field(default_factory=list)
    audit: Audit = field(default_factory=lambda: Audit(()))
    checklist: list[ChecklistItem] = field(default_factory=list)
    runs: tuple[SmokeRun, ...] = ()  # every run given, stale ones too
    project: Project = field(default_factory=unknown_project)
    tested: Tested = field(default_factory=lambda: what_was_tested(()))
    next_steps: list[str] = field(default_factory=list)

    @property
    def current_runs(self) -> tuple[SmokeRun, ...]:
        return tuple(run for run in self.runs if run.current)

    @property
    def stale_runs(self) -> tuple[SmokeRun, ...]:
        return tuple(run for run in self.runs if not run.current)

    @property
    def title(self) -> str:
        return f"cudalint migration decision: {self.project.name}"

    @property
    def holds_after(self) -> str | None:
        """When the decision assumes fixes not applied yet: the command and what it removes."""
        fixable = self.audit.count(Effort.FIXABLE)
        if not fixable:
            return None
        return f"holds after `cudalint check --fix`, which removes {fixable} finding(s)"

    @property
    def identity(self) -> str:
        """Project, commit, date, cudalint version: one line."""
        project = self.project
        return (f"{project.name} at {project.commit_text}; {project.date}; cudalint "
                f"{project.version}")

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
            "title": self.title,
            "project": self.project.to_dict(),
            "verdict": self.verdict.value,
            "headline": self.headline,
            "holds_after": self.holds_after,
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
            "smoke": [run.to_dict() for run in self.runs],
            "tested": self.tested.to_dict(),
            "next_steps": self.next_steps,
            "findings": [item.to_dict() for item in self.audit.items],
        }


def decide(audit: Audit, runs: Sequence[SmokeRun] = (), target: str | None = None,
           project: Project | None = None) -> Decision:
    """`target`: the smoke TARGET to suggest when no run names one (else the project's first
    smoke target). Stale runs are kept to be shown; only current ones decide."""
    project = project or unknown_project()
    given = tuple(runs)
    runs = tuple(run for run in given if run.current)
    target = target or next(iter(project.smoke_targets), None)
    blockers = [i for i in audit.items if i.path is PathClass.MAIN and i.effort is Effort.BLOCKER]
    by_hand = [i for i in audit.items if i.path is PathClass.MAIN and i.effort is Effort.BY_HAND]
    side = [i for i in audit.items if i.path in _SIDE_PATHS and i.effort in _WORK]
    distributed = [i for i in side if i.path is PathClass.DISTRIBUTED]
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
        verdict = Verdict.DUAL_TRACK
        scope = SINGLE_DEVICE if distributed else TOOLING_ONLY
    else:
        verdict = Verdict.MAC_ALLOWED
        reasons = [_allowed_reason(audit)]
    command = _confirm_command(runs, target)
    evidence, note = _evidence(verdict, runs, bool(blockers), command)
    notes = (_notes(audit) + [Reason(text, run.source) for run in runs
                              for text in run.protocol_notes()]
             + [Reason(f"stale: {'; '.join(run.stale)}: smoke {run.target} on {run.device} "
                       "gives no evidence", run.source) for run in given if not run.current])
    decision = Decision(verdict, evidence, note, command, scope, reasons, notes, audit,
                        build_checklist(audit, runs, project), given, project,
                        what_was_tested(runs))
    decision.next_steps = next_steps(decision, target)
    return decision


def next_steps(decision: Decision, target: str | None) -> list[str]:
    """What to do next, concretely: the fixes, the smoke runs to write or run, the work by
    hand, and what is left to a person."""
    audit, project = decision.audit, decision.project
    steps = []
    if audit.count(Effort.FIXABLE):
        steps.append(f"`cudalint check --fix`: removes {audit.count(Effort.FIXABLE)} finding(s)")
    if audit.count(Effort.UNSAFE_FIXABLE):
        steps.append("`cudalint check --fix --unsafe-fixes --diff`: review, then apply: "
                     f"removes {audit.count(Effort.UNSAFE_FIXABLE)} more")
    steps += [f"by hand: {where}: {', '.join(codes)}" for where, codes in _by_hand(audit)]
    for run in decision.stale_runs:
        steps.append(f"rerun `cudalint smoke {run.target} --device {run.device} --json "
                     f"{run.source}`: the run given is stale ({'; '.join(run.stale)})")
    current = decision.current_runs
    devices = {run.device for run in current}
    if target is None:
        steps.append(f"write a smoke target: `cudalint smoke --init` writes {INIT_FILE} from "
                     "the project's model, optimizer and loss, its guesses marked "
                     f"'# GUESS: confirm'; check them, then `cudalint smoke {INIT_TARGET}`")
    else:
        reference = next(iter(project.references), None)
        compare = (f" --reference {reference}" if reference
                   else " (save a reference on the CUDA server first: `cudalint smoke "
                        f"{target} --device cuda --save-reference ref.safetensors`)")
        if "cpu" not in devices:
            steps.append(f"`cudalint smoke {target} --device cpu"
                         + (f" --reference {reference}" if reference else "")
                         + " --json smoke-cpu.json`")
        if "mps" not in devices:
            steps.append(f"on the Mac: `cudalint smoke {target} --device mps"
                         + (f" --reference {reference} --json smoke-mps.json`" if reference
                            else f" --json smoke-mps.json`{compare}"))
        resumable = next(iter(project.resumable_targets), None)
        if resumable and not any(run.statuses.get("interrupted") in ("pass", "fail")
                                 for run in current):
            steps.append(f"resume after a save: `cudalint smoke {resumable} --interrupt 2`")
    if current:
        steps.append("pass the smoke JSON files to `cudalint report --smoke ...` and keep them "
                     "with this sheet")
    for item in decision.checklist:
        if item.status.value == "unknown":
            steps.append(f"by hand: {item.title}: {item.evidence}")
    steps.append("by hand: check the data-handling rules (licences, personal data, where data "
                 "may be copied)")
    return steps


def _by_hand(audit: Audit) -> list[tuple[str, list[str]]]:
    """The main path's work by hand and blockers, one entry per file:line."""
    per_line: dict[str, list[str]] = {}
    for item in audit.items:
        if item.path is PathClass.MAIN and item.effort in _WORK:
            codes = per_line.setdefault(item.where, [])
            if item.finding.code and item.finding.code not in codes:
                codes.append(item.finding.code)
    return list(per_line.items())


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
    named = next((run.target for run in runs), None) or target
    if named is None:
        return (f"cudalint smoke --init, then cudalint smoke {INIT_TARGET} --device mps --json "
                "smoke-mps.json  (on a Mac)")
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
    uncompared = [run for run in runs if run.on_mps]  # passed, compared nothing
    if uncompared:
        run = uncompared[0]
        why = run.details.get("compare") or "no compare check in the run"
        return Evidence.PORTABLE, (
            f"smoke {run.target} passed on MPS without comparing its outputs ({why}; "
            f"{run.source}): the code runs there, its results are unchecked; confirm with a "
            f"comparison: {command}")
    if runs:
        ran = ", ".join(sorted({run.device for run in runs}))
        return Evidence.PORTABLE, (
            f"smoke passed on {ran}, not compared on MPS: this shows the code is portable, "
            f"not that MPS works; confirm: {command}")
    return Evidence.PROVISIONAL, f"from the static findings only; confirm: {command}"

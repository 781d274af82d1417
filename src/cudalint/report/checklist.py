"""The guides' checklist for a move to a Mac, each item with its status and its evidence.

Statuses: *done* (the evidence, which names what was checked, shows it), *open* (work or a
decision is left), *failed* (a smoke run showed the opposite), *unchecked* (no evidence yet, or
the user's to judge), *unknown* (there is nothing cudalint could check: no dependency file).
Only runs that describe the project as it is now are evidence.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cudalint.report.audit import NATIVE_FAMILIES, Audit, Effort, Item
from cudalint.report.evidence import SmokeRun
from cudalint.report.project import Project, unknown_project
from cudalint.runtime.smoke.tolerances import declared_first

_SHOWN = 3


class Status(str, enum.Enum):
    DONE = "done"
    OPEN = "open"
    FAILED = "failed"
    UNCHECKED = "unchecked"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ChecklistItem:
    title: str
    status: Status
    evidence: str

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "status": self.status.value, "evidence": self.evidence}


def build_checklist(audit: Audit, runs: Sequence[SmokeRun],
                    project: Project | None = None) -> list[ChecklistItem]:
    project = project or unknown_project()
    runs = [run for run in runs if run.current]
    mps = [run for run in runs if run.on_mps]
    return [
        _dependencies(audit, project),
        _components(audit),
        _mps_available(mps, runs),
        _representative_run(mps, runs),
        _outputs_compared(mps, runs),
        _cpu_fallback(mps, runs),
        _recorded(runs),
        ChecklistItem("Data-handling rules respected (licences, personal data, where data may "
                      "be copied)", Status.UNCHECKED,
                      "left to you: cudalint cannot judge this"),
    ]


def _listed(items: Sequence[Item]) -> str:
    shown = "; ".join(f"{i.where} {i.finding.code}: {i.finding.message}" for i in items[:_SHOWN])
    more = f"; and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return shown + more


def _dependencies(audit: Audit, project: Project) -> ChecklistItem:
    title = "Dependencies install on macOS (no CUDA pins; CUDA-only packages replaced)"
    pins = [i for i in audit.items if i.family == "CUD4"]
    if pins:
        return ChecklistItem(title, Status.OPEN, f"{len(pins)} CUDA pin(s): {_listed(pins)}")
    if not project.known:
        return ChecklistItem(title, Status.UNKNOWN, "no CUDA pin found; the project's "
                             "dependency files were not looked for")
    if not project.dependency_files:
        return ChecklistItem(title, Status.UNKNOWN, "no dependency file (requirements*.txt, "
                             "environment.yml, pyproject.toml or setup.py dependencies, "
                             "Pipfile, Dockerfile): nothing says what to install")
    return ChecklistItem(title, Status.DONE, "checked "
                         + ", ".join(project.dependency_files)
                         + ": no CUDA pin or CUDA-only package")


def _components(audit: Audit) -> ChecklistItem:
    title = "CUDA-only components identified, each with an acceptable alternative"
    native = [i for i in audit.items if (i.finding.code or "").startswith(NATIVE_FAMILIES)]
    mandatory = [i for i in native if i.effort is Effort.BLOCKER]
    if mandatory:
        return ChecklistItem(title, Status.OPEN,
                             f"{len(mandatory)} without an alternative on the main path: "
                             f"{_listed(mandatory)}")
    if native:
        return ChecklistItem(title, Status.DONE, f"{len(native)} found, each guarded or "
                             f"optional: {_listed(native)}")
    if not audit.files:
        return ChecklistItem(title, Status.UNKNOWN, "no file was checked")
    return ChecklistItem(title, Status.DONE, f"checked {audit.files} file(s) (imports, build "
                         "scripts, CUDA and C++ sources): no CUDA-only library or native CUDA "
                         "code")


def _mps_available(mps: list[SmokeRun], runs: Sequence[SmokeRun]) -> ChecklistItem:
    title = "MPS built and available in the environment actually used"
    for run in mps:
        env = run.environment
        if env.get("mps_built") and env.get("mps_available"):
            return ChecklistItem(title, Status.DONE,
                                 f"{run.source}: MPS built and available, torch "
                                 f"{env.get('torch', '?')}, {env.get('os', '?')} "
                                 f"{env.get('os_release', '')} {env.get('machine', '')}".rstrip())
    if runs:
        env = runs[0].environment
        return ChecklistItem(title, Status.UNCHECKED,
                             f"the smoke runs given ran on {env.get('os', '?')} (MPS built="
                             f"{env.get('mps_built')}, available={env.get('mps_available')}): "
                             "run `cudalint smoke` on the Mac")
    return ChecklistItem(title, Status.UNCHECKED, "no smoke run given: run `cudalint smoke` on "
                         "the Mac and pass its --json to --smoke")


def _representative_run(mps: list[SmokeRun], runs: Sequence[SmokeRun]) -> ChecklistItem:
    title = "A representative run passes on the target backend (MPS)"
    failed = [run for run in mps if not run.passed]
    if failed:
        return ChecklistItem(title, Status.FAILED, failed[0].failure())
    if mps:
        return ChecklistItem(title, Status.DONE, f"smoke {mps[0].target} passed on mps "
                             f"({mps[0].source})")
    cpu = [run for run in runs if run.passed]
    if cpu:
        return ChecklistItem(title, Status.UNCHECKED, f"passed on {cpu[0].device} only: the code "
                             "is portable; MPS itself is not shown")
    return ChecklistItem(title, Status.UNCHECKED, "no smoke run on MPS given")


def _outputs_compared(mps: list[SmokeRun], runs: Sequence[SmokeRun]) -> ChecklistItem:
    title = "Important outputs compared within the study's tolerance"
    for run in mps:
        comparison = run.comparison()
        if comparison is None:
            continue
        if comparison.status == "fail":
            return ChecklistItem(title, Status.FAILED, run.failure())
        compared = (f"smoke {run.target} on mps against {comparison.reference}: within "
                    f"{run.tolerance_text}, largest abs diff {comparison.difference} "
                    f"({run.source})")
        if not declared_first(run.tolerance):
            return ChecklistItem(title, Status.UNCHECKED, f"{compared}; the study's tolerance "
                                 "is one declared before the run: put it in "
                                 "[tool.cudalint.smoke] in pyproject.toml, commit, run again")
        return ChecklistItem(title, Status.DONE, compared)
    elsewhere = [(run, c) for run in runs if (c := run.comparison()) is not None]
    if elsewhere:
        run, comparison = elsewhere[0]
        return ChecklistItem(title, Status.UNCHECKED,
                             f"compared on {run.device} only ({comparison.status} against "
                             f"{comparison.reference}, largest abs diff "
                             f"{comparison.difference}; {run.source}): not on MPS; "
                             "`cudalint smoke ... --reference ref.safetensors` on the Mac")
    return ChecklistItem(title, Status.UNCHECKED, "no MPS run compared with a reference: "
                         "`cudalint smoke ... --reference ref.safetensors` on the Mac")


def _cpu_fallback(mps: list[SmokeRun], runs: Sequence[SmokeRun]) -> ChecklistItem:
    title = "CPU fallback checked (no operator falls back on the hot path)"
    for run in mps:
        status = run.statuses.get("ops")
        if status == "fail":
            return ChecklistItem(title, Status.FAILED, run.failure())
        if status in ("pass", "warn"):
            return ChecklistItem(title, Status.DONE, f"op audit on mps: {status} ({run.source})")
    predicted = sorted({hazard for run in runs for hazard in run.predicted})
    if predicted:
        return ChecklistItem(title, Status.OPEN, "a run elsewhere predicts for a Mac: "
                             + ", ".join(predicted))
    return ChecklistItem(title, Status.UNCHECKED, "no op audit on MPS given")


def _recorded(runs: Sequence[SmokeRun]) -> ChecklistItem:
    title = "Versions, settings and observations recorded"
    for run in runs:
        env = run.environment
        if env:
            precision = env.get("precision") or {}
            dtype = f"; default dtype {precision['default_dtype']}" if precision.get(
                "default_dtype") else ""
            return ChecklistItem(title, Status.DONE,
                                 f"{run.source}: Python {env.get('python', '?')}, torch "
                                 f"{env.get('torch', '?')}, {env.get('os', '?')}, device "
                                 f"{env.get('device', run.device)}{dtype}; and this report")
    return ChecklistItem(title, Status.OPEN, "no smoke environment recorded: keep the "
                         "`cudalint smoke --json` report with this one")

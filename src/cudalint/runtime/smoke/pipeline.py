"""Run the checks in order and gather a SmokeReport. Imports torch: load the target first."""

from __future__ import annotations

import cmath
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from cudalint.runtime.smoke import checks, environment, interrupt, kill, training
from cudalint.runtime.smoke.artefacts import Artefact, artefact_records
from cudalint.runtime.smoke.audit import AutocastWatch, OpAudit, OpLog
from cudalint.runtime.smoke.compare import Tolerance, measure
from cudalint.runtime.smoke.crash import Crash
from cudalint.runtime.smoke.errors import HarnessError
from cudalint.runtime.smoke.hazards import HazardContext, build_hazards, op_summary
from cudalint.runtime.smoke.interrupt import interrupted_check
from cudalint.runtime.smoke.mps_messages import parse_mps_message
from cudalint.runtime.smoke.outputs import Leaf, UnsupportedOutput, flatten, tensors
from cudalint.runtime.smoke.ramp import batch_ramp
from cudalint.runtime.smoke.reference import Reference, save_reference
from cudalint.runtime.smoke.report import Check, Hazard, SmokeReport, Status
from cudalint.runtime.smoke.target import Outcome, Target, describe_call, run_target

_MAX_WARNINGS = 20


@dataclass(frozen=True)
class SmokeOptions:
    device: torch.device
    reference: Reference | None  # with None, `compare_with_cpu` decides
    compare_with_cpu: bool
    save_reference: Path | None
    tolerance: Tolerance
    repeat: int
    allow_fallback: bool
    batch_sizes: tuple[int, ...] = ()
    interrupt: int = 0  # steps before the deliberate interruption; 0: none
    kill_after: int = 0  # steps before the SIGKILL (during the next); 0: none
    requested: tuple[tuple[str, str], ...] = ()  # (check name, the option that asked for it)


def run_smoke(target: Target | Crash, options: SmokeOptions, target_text: str,
              watch: environment.TorchImportWatch) -> SmokeReport:
    """`target` is the loaded target, or the Crash its module raised while being imported."""
    device = options.device
    report = SmokeReport(target=target_text, device=str(device),
                         requested=dict(options.requested))
    report.environment = environment.collect(device, watch)
    report.checks += [environment.environment_check(report.environment),
                      checks.transfer_check(device)]
    if isinstance(target, Crash):
        _fail_run(report, target, OpLog(), [], options)
        return report
    outcome, log, texts, trained = _audited_run(target, device)
    report.environment["precision"] = environment.precision(log.autocast)
    report.warnings = sorted(set(texts))[:_MAX_WARNINGS]
    if outcome.crash is not None:
        _fail_run(report, outcome.crash, log, texts, options)
        _protocol(report, target, options, finished=False)
        return report
    files: list[Artefact] = []
    try:
        leaves = flatten(outcome.output, files)
    except UnsupportedOutput as exc:
        _fail_run(report, Check("run", Status.FAIL, str(exc)), log, texts, options)
        return report
    report.checks.append(_run_check(target, device, outcome, leaves))
    _add_audit(report, log, texts, options)
    report.checks.append(_training(report, trained, options))
    reference_files: list[Artefact] = []
    compared, expected = _compare(target, leaves, options, reference_files)
    if expected is not None:
        report.extra["differences"] = measure(leaves, expected, options.tolerance)
    report.checks += [
        _with_random_hint(compared, log, options),
        checks.determinism_check(target, device, leaves, options.repeat, options.tolerance),
        checks.checkpoint_check(outcome.output),
    ]
    if files:
        report.extra["artefacts"] = artefact_records(files, reference_files)
    _protocol(report, target, options, finished=True)
    if options.save_reference is not None:
        _save(options.save_reference, target, leaves, report, log)
    return report


def _protocol(report: SmokeReport, target: Target, options: SmokeOptions, *,
              finished: bool) -> None:
    """The validation protocol's extra runs, when asked for: the batch ramp (also after a
    crash, which may be an out-of-memory at the default size), the interruption, the kill."""
    if options.batch_sizes:
        check, runs = batch_ramp(target, options.device, options.batch_sizes)
        report.checks.append(check)
        report.extra["batches"] = [run.to_dict() for run in runs]
    if options.interrupt and not finished:
        report.checks.append(Check(interrupt.NAME, Status.SKIPPED, "the target did not finish"))
    elif options.interrupt:
        check, facts = interrupted_check(target, options.device, options.interrupt,
                                         options.tolerance)
        report.checks.append(check)
        report.extra["interrupted"] = facts
    if options.kill_after and not finished:
        report.checks.append(Check(kill.NAME, Status.SKIPPED, "the target did not finish"))
    elif options.kill_after:
        check, facts = kill.killed_check(target, options.device, options.kill_after,
                                         options.tolerance)
        report.checks.append(check)
        report.extra["killed"] = facts


def _save(path: Path, target: Target, leaves: list[Leaf], report: SmokeReport,
          log: OpLog) -> None:
    try:
        save_reference(path, leaves, target=target.spec.identity, target_text=target.spec.text,
                       environment=report.environment,
                       random_ops=tuple(sorted(log.device_random)),
                       losses=training.losses_of(report.extra.get("training")))
    except Exception as exc:
        raise HarnessError(f"cannot write the reference {path}: {exc}") from None
    report.saved_reference = str(path)


def _audited_run(target: Target, device: torch.device
                 ) -> tuple[Outcome, OpLog, list[str], training.TrainingWatch]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with training.TrainingWatch() as watch, OpAudit(device) as audit, \
                AutocastWatch(device, audit.log.autocast):
            outcome = run_target(target, device)
    return outcome, audit.log, [str(warning.message) for warning in caught], watch


def _training(report: SmokeReport, watch: training.TrainingWatch,
              options: SmokeOptions) -> Check:
    """The training check, against the reference's per-step losses when it has them."""
    section = training.summary(watch)
    reference = options.reference.training_losses if options.reference is not None else None
    if section is not None:
        if reference is not None:
            section["reference_losses"] = [training.json_number(v) for v in reference]
        report.extra["training"] = section
    return training.training_check(watch, reference, options.tolerance)


def _fail_run(report: SmokeReport, failure: Crash | Check, log: OpLog, texts: list[str],
              options: SmokeOptions) -> None:
    """The run check failed (a crash, or an output that can't be compared): the audit of what
    ran, and the checks that need outputs skipped."""
    if isinstance(failure, Crash):
        report.error = failure.to_dict()
        texts = [*texts, failure.message]
        failure = Check("run", Status.FAIL, failure.summary())
    report.checks.append(failure)
    _add_audit(report, log, texts, options)
    reason = "the target did not finish" if report.error else "the output can't be compared"
    if options.save_reference is not None:
        reason += "; no reference was saved"
    report.checks += [Check(name, Status.SKIPPED, reason)
                      for name in (training.NAME, "compare", "determinism", "checkpoint")]


def _run_check(target: Target, device: torch.device, outcome: Outcome,
               leaves: list[Leaf]) -> Check:
    found = tensors(leaves)
    detail = (f"{describe_call(target, device)} returned {len(leaves)} output(s), "
              f"{len(found)} tensor(s), in {outcome.seconds:.2f}s")
    bad = [leaf.path for leaf in leaves if _non_finite(leaf.value)]
    if bad:
        return Check("run", Status.WARN, f"{detail}; NaN or infinity in {', '.join(bad[:5])}")
    return Check("run", Status.PASS, detail)


def _non_finite(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        usable = value.is_floating_point() or value.is_complex()
        return usable and value.numel() > 0 and not bool(torch.isfinite(value).all())
    if isinstance(value, (float, complex)):
        return not cmath.isfinite(value)
    return False


def _add_audit(report: SmokeReport, log: OpLog, texts: list[str],
               options: SmokeOptions) -> None:
    coverage, note = _coverage()
    ctx = HazardContext(options.device.type, options.allow_fallback, coverage)
    messages = [m for m in map(parse_mps_message, texts) if m is not None]
    hazards = build_hazards(log, messages, ctx)
    report.hazards = hazards
    report.ops = op_summary(log, hazards, ctx)
    report.checks.append(_audit_check(log, hazards, options.device, note))


def _coverage() -> tuple[Any, str]:
    try:
        from cudalint.mps_ops import load_coverage

        coverage = load_coverage()
    except Exception as exc:  # the table only adds predictions; the run stands without it
        return None, f"no MPS op table ({type(exc).__name__}: {exc})"
    note = f"MPS op table for torch {coverage.version}"
    return coverage, note if coverage.exact else f"{note} (nearest to {coverage.requested})"


def _audit_check(log: OpLog, hazards: list[Hazard], device: torch.device, note: str) -> Check:
    if not log.counts and not hazards:
        return Check("ops", Status.SKIPPED, "no op ran")
    errors = [hazard for hazard in hazards if hazard.severity.value == "error"]
    status = Status.FAIL if errors else Status.WARN if hazards else Status.PASS
    counts = f"{sum(log.counts.values())} ops ({len(log.counts)} distinct) on {device}; {note}"
    if not hazards:
        return Check("ops", status, f"{counts}; no hazards")
    listed = ", ".join(f"{h.subject} ({h.severity.value}{', predicted' if h.predicted else ''})"
                       for h in hazards)
    return Check("ops", status, f"{counts}; hazards: {listed}")


def _compare(target: Target, leaves: list[Leaf], options: SmokeOptions,
             files: list[Artefact]) -> tuple[Check, list[Leaf] | None]:
    """The comparison with the reference, and the reference's leaves when there were some; the
    files the CPU reference run named go to `files`."""
    if options.reference is not None:
        expected = options.reference.leaves
        return checks.reference_check(leaves, expected, options.tolerance,
                                      f"the reference ({options.reference.origin()})"), expected
    if not options.compare_with_cpu:
        return Check("compare", Status.SKIPPED,
                     "saving a reference; pass --reference cpu to also compare with CPU"), None
    if options.device.type == "cpu":
        return Check("compare", Status.SKIPPED,
                     "the target ran on cpu, the default reference; pass --reference PATH "
                     "to compare with outputs saved on another machine"), None
    found = checks.rerun(target, torch.device("cpu"), files)
    if isinstance(found, checks.RunFailure):
        return Check("compare", Status.FAIL, found.after("the reference run on cpu")), None
    return checks.reference_check(leaves, found, options.tolerance,
                                  "the same run on cpu"), found


def _with_random_hint(check: Check, log: OpLog, options: SmokeOptions) -> Check:
    """A failed comparison between two devices that drew random numbers on a device: say that
    each device has its own random stream, the usual cause."""
    reference = options.reference
    if check.status is not Status.FAIL:
        return check
    if reference is not None and reference.device_type == options.device.type:
        return check
    drawn = sorted({*log.device_random, *(reference.random_ops if reference else ())})
    if not drawn:
        return check
    hint = (f"; random numbers were drawn on the device ({', '.join(drawn[:4])}): CPU, CUDA and "
            "MPS have different random streams, so draw them on the CPU (or with a CPU "
            "torch.Generator) and move them")
    return Check(check.name, check.status, check.detail + hint)

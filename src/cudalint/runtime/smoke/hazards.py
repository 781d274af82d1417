"""Turn what a run showed (ops, torch's messages) into hazards for a Mac.

Seen on MPS, a CPU fallback or a mixed-device op is an error (a warning with --allow-fallback).
Predicted from a run elsewhere (float64, ops without an MPS kernel) it is a warning.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from cudalint.runtime.smoke.audit import OpLog
from cudalint.runtime.smoke.mps_messages import MpsMessage
from cudalint.runtime.smoke.report import Hazard, HazardKind, OpSummary, Severity

_FALLBACK_VAR = "PYTORCH_ENABLE_MPS_FALLBACK"


@dataclass(frozen=True)
class HazardContext:
    target: str  # the device type the target ran on
    allow_fallback: bool
    coverage: Any  # cudalint.mps_ops.Coverage, or None when no table could be loaded

    @property
    def on_mps(self) -> bool:
        return self.target == "mps"

    @property
    def fallback_severity(self) -> Severity:
        if self.on_mps and not self.allow_fallback:
            return Severity.ERROR
        return Severity.WARNING


def build_hazards(log: OpLog, messages: Iterable[MpsMessage], ctx: HazardContext) -> list[Hazard]:
    hazards = _from_messages(messages, ctx)
    named = {hazard.op for hazard in hazards if hazard.op}
    hazards += [h for h in _from_coverage(log, ctx) if h.op not in named]
    seen_dtypes = {hazard.dtype for hazard in hazards if hazard.dtype}
    hazards += [h for h in _from_dtypes(log) if h.dtype not in seen_dtypes]
    hazards += _from_devices(log, ctx)
    order = {Severity.ERROR: 0, Severity.WARNING: 1}
    return sorted((_located(hazard, log) for hazard in hazards),
                  key=lambda hazard: (order[hazard.severity], hazard.subject))


def _located(hazard: Hazard, log: OpLog) -> Hazard:
    """An op's or a dtype's hazard, with the line of the user's code where it first ran."""
    if hazard.kind in (HazardKind.CPU_OP, HazardKind.MIXED_DEVICE):
        return hazard  # their details say where already
    where = (log.first_seen.get(hazard.op) if hazard.op
             else log.dtype_frames.get(hazard.dtype) if hazard.dtype else None)
    return replace(hazard, where=(where,)) if where and where != "?" else hazard


def _from_messages(messages: Iterable[MpsMessage], ctx: HazardContext) -> list[Hazard]:
    counted = Counter(messages)
    return [_message_hazard(message, count, ctx) for message, count in counted.items()]


def _message_hazard(message: MpsMessage, count: int, ctx: HazardContext) -> Hazard:
    kind = message.kind
    if kind is HazardKind.CPU_FALLBACK:
        detail = (f"ran on the CPU through {_FALLBACK_VAR} (slow, and its tensors travel "
                  "between CPU and GPU)")
        severity = ctx.fallback_severity
    elif kind is HazardKind.NO_MPS_KERNEL:
        detail = (f"has no MPS kernel and raised NotImplementedError; set {_FALLBACK_VAR}=1 "
                  "before torch is imported to run it on the CPU, or avoid the op")
        severity = Severity.ERROR
    elif kind is HazardKind.DTYPE:
        detail = f"MPS has no {message.dtype}; convert to float32 (or complex64) before .to(device)"
        severity = Severity.ERROR
    else:
        detail = "DataLoader(pin_memory=True) is not supported on MPS and is ignored"
        severity = Severity.WARNING
    return Hazard(kind, severity, detail, op=message.op, dtype=message.dtype, count=count)


def missing_ops(log: OpLog, ctx: HazardContext) -> dict[str, Any]:
    """Ops run on the target device that have no MPS kernel, with their OpStatus."""
    if ctx.coverage is None:
        return {}
    found = {}
    for name, overloads in sorted(log.overloads.items()):
        if ctx.target not in log.devices.get(name, set()):
            continue
        statuses = [ctx.coverage.status(o) for o in sorted(overloads) if _counts(o, ctx)]
        worst = next((status for status in statuses if status.missing), None)
        if worst is not None:
            found[name] = worst
    return found


def _counts(overload: str, ctx: HazardContext) -> bool:
    """Off MPS, an op without an MPS kernel predicts trouble only if CPU and CUDA share it:
    one with a kernel for a single backend (`_scaled_dot_product_flash_attention_for_cpu`,
    `mkldnn_rnn_layer`) is that backend's own implementation, and a Mac takes another path."""
    if ctx.on_mps or ctx.coverage.status(overload).value != "no-mps":
        return True
    return {"cpu", "cuda"} <= ctx.coverage.flags(overload)


def _from_coverage(log: OpLog, ctx: HazardContext) -> list[Hazard]:
    hazards = []
    version = ctx.coverage.version if ctx.coverage is not None else "?"
    for name, status in missing_ops(log, ctx).items():
        always = status.value == "always-fallback"
        count = log.counts[name]
        if ctx.on_mps and name in log.raised:
            hazards.append(Hazard(
                HazardKind.NO_MPS_KERNEL, Severity.ERROR,
                f"no MPS kernel in torch {version}, and it raised on MPS", op=name, count=count))
        elif ctx.on_mps:
            # It ran on MPS without raising, so torch sent it through the CPU fallback.
            hazards.append(Hazard(
                HazardKind.CPU_FALLBACK, ctx.fallback_severity,
                f"no MPS kernel in torch {version}; it ran through the CPU fallback",
                op=name, count=count))
        elif always:
            hazards.append(Hazard(
                HazardKind.CPU_FALLBACK, Severity.WARNING,
                f"always runs on the CPU on a Mac (torch {version} sends it through the MPS "
                "fallback)", op=name, predicted=True, count=count))
        else:
            hazards.append(Hazard(
                HazardKind.NO_MPS_KERNEL, Severity.WARNING,
                f"no MPS kernel in torch {version}: on a Mac it raises NotImplementedError, or "
                f"runs on the CPU with {_FALLBACK_VAR}=1", op=name, predicted=True, count=count))
    return hazards


def _from_dtypes(log: OpLog) -> list[Hazard]:
    hazards = []
    for dtype, ops in sorted(log.dtype_ops.items()):
        listed = ", ".join(f"{op} ({n})" for op, n in ops.most_common(4))
        hazards.append(Hazard(
            HazardKind.DTYPE, Severity.WARNING,
            f"{dtype} tensors in {listed}: MPS has no {dtype}; use float32 (or complex64) for "
            "tensors that go to the device", dtype=dtype, predicted=True,
            count=sum(ops.values())))
    return hazards


def _from_devices(log: OpLog, ctx: HazardContext) -> list[Hazard]:
    hazards = []
    for name, combos in sorted(log.mixed.items()):
        hazards.append(Hazard(
            HazardKind.MIXED_DEVICE, ctx.fallback_severity,
            f"took tensors on {', '.join(sorted(combos))} in one call (an implicit transfer, or "
            f"a tensor left behind by a forgotten .to(device)), first at {_at(log, name)}",
            op=name, count=log.counts[name]))
    if log.cpu_ops:
        total = sum(log.cpu_ops.values())
        listed = ", ".join(f"{op} ({n}, first at {_at(log, op)})"
                           for op, n in log.cpu_ops.most_common(5))
        hazards.append(Hazard(
            HazardKind.CPU_OP, Severity.WARNING,
            f"{total} ops ran on the CPU while the target device is {ctx.target}: {listed}; "
            "fine for data preparation, otherwise a forgotten .to(device)", count=total))
    return hazards


def _at(log: OpLog, op: str) -> str:
    return log.frames.get(op, "?")


def op_summary(log: OpLog, hazards: list[Hazard], ctx: HazardContext) -> OpSummary:
    fallbacks = sorted({h.op for h in hazards
                        if h.kind is HazardKind.CPU_FALLBACK and h.op and not h.predicted})
    return OpSummary(
        counts=dict(log.counts.most_common()),
        devices={name: sorted(devices) for name, devices in sorted(log.devices.items())},
        fallbacks=fallbacks,
        without_mps_kernel=sorted(missing_ops(log, ctx)),
    )

"""Pieces of the pipeline that need an accelerator's view: the random-stream hint."""

from __future__ import annotations

from collections import Counter

import torch

from cudalint.runtime.smoke.audit import OpLog
from cudalint.runtime.smoke.compare import Tolerance
from cudalint.runtime.smoke.pipeline import SmokeOptions, _with_random_hint
from cudalint.runtime.smoke.reference import Reference
from cudalint.runtime.smoke.report import Check, Status

FAILED = Check("compare", Status.FAIL, "logits: 4 of 4 elements differ")


def _options(device: str, reference: Reference | None = None) -> SmokeOptions:
    return SmokeOptions(device=torch.device(device), reference=reference, compare_with_cpu=True,
                        save_reference=None, tolerance=Tolerance(), repeat=0,
                        allow_fallback=False)


def _reference(device: str, random_ops: tuple[str, ...] = ()) -> Reference:
    return Reference(target="t:f", target_text="t.py:f", environment={"device": device},
                     created="now", leaves=[], random_ops=random_ops)


def _drew_on_device() -> OpLog:
    log = OpLog()
    log.device_random = Counter({"aten::randn": 2})
    return log


def test_hint_when_random_numbers_came_from_the_device() -> None:
    hinted = _with_random_hint(FAILED, _drew_on_device(), _options("mps"))
    assert hinted.status is Status.FAIL
    assert hinted.detail.startswith(FAILED.detail)
    assert "random numbers were drawn on the device (aten::randn)" in hinted.detail


def test_hint_from_the_references_own_draws() -> None:
    reference = _reference("cuda:0", ("aten::native_dropout",))
    hinted = _with_random_hint(FAILED, OpLog(), _options("cpu", reference))
    assert "aten::native_dropout" in hinted.detail


def test_no_hint_without_cause() -> None:
    assert _with_random_hint(FAILED, OpLog(), _options("mps")) == FAILED
    same_device = _options("mps", _reference("mps", ("aten::randn",)))
    assert _with_random_hint(FAILED, _drew_on_device(), same_device) == FAILED
    passed = Check("compare", Status.PASS, "ok")
    assert _with_random_hint(passed, _drew_on_device(), _options("mps")) == passed

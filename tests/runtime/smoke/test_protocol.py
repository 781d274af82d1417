"""The validation protocol: the batch ramp, the interrupted run, device boundaries, precision."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from cudalint.runtime.smoke import ramp
from cudalint.runtime.smoke.audit import AutocastWatch, OpAudit
from cudalint.runtime.smoke.hazards import HazardContext, build_hazards

from .helpers import check, target

THIS_FILE = Path(__file__).name


def test_batch_ramp_records_every_size(smoke) -> None:
    code, report, out, _ = smoke(target("resumable.py:train"), "--batch-sizes", "1,8,32")
    assert code == 0
    assert [(b["batch_size"], b["status"]) for b in report["batches"]] == [
        (1, "ok"), (8, "ok"), (32, "ok")]
    assert all(b["memory_kind"] == "CPU peak RSS of the process" and b["peak_memory"] > 2**20
               for b in report["batches"])
    assert check(report, "batch-ramp")["detail"].startswith(
        "every batch size fits (1, 8, 32), largest 32")
    assert "PASS     batch-ramp" in out


def test_batch_ramp_stops_at_the_first_out_of_memory(smoke, monkeypatch) -> None:
    monkeypatch.setenv("SMOKE_MEMORY_LIMIT", "10")
    code, report, _, _ = smoke(target("resumable.py:train"), "--batch-sizes", "32,1,8,64")
    assert code == 0, "running out of memory at a large size is a finding, not a failure"
    assert [(b["batch_size"], b["status"]) for b in report["batches"]] == [
        (1, "ok"), (8, "ok"), (32, "out-of-memory")]  # 64 is never tried
    ramp_check = check(report, "batch-ramp")
    assert ramp_check["status"] == "warn"
    assert ramp_check["detail"].startswith(
        "largest batch size that fits: 8; 32 ran out of memory")
    monkeypatch.setenv("SMOKE_MEMORY_LIMIT", "0")
    code, report, _, _ = smoke(target("resumable.py:train"), "--batch-sizes", "1,8")
    assert code == 1
    assert check(report, "batch-ramp")["detail"].startswith("no batch size fits")


def test_batch_ramp_crash_and_missing_parameter(smoke) -> None:
    code, report, _, _ = smoke(target("resumable.py:broken_batches"), "--batch-sizes", "1,8,32")
    assert code == 1
    assert check(report, "batch-ramp")["detail"].startswith("batch size 8 crashed: RuntimeError")
    assert [b["batch_size"] for b in report["batches"]] == [1, 8]
    code, report, _, _ = smoke(target("healthy.py:trained_model"), "--batch-sizes", "1,8")
    assert code == 2 and report["verdict"] == "fail"
    assert check(report, "batch-ramp")["status"] == "skipped"
    assert "takes no batch_size parameter" in check(report, "batch-ramp")["detail"]


@pytest.mark.parametrize("sizes", ["1,x", "0,8", ","])
def test_bad_batch_sizes_are_usage_errors(smoke, sizes: str) -> None:
    code, _, _, err = smoke(target("resumable.py:train"), f"--batch-sizes={sizes}")
    assert code == 2 and "--batch-sizes" in err


def test_interrupted_run_matches_the_uninterrupted_one(smoke) -> None:
    code, report, _, _ = smoke(target("resumable.py:train"), "--interrupt", "2")
    assert code == 0, check(report, "interrupted")
    detail = check(report, "interrupted")["detail"]
    assert detail.startswith("2 steps, checkpoint (")
    assert "reloaded in a fresh process, 2 more: matches 4 uninterrupted steps" in detail
    assert report["interrupted"]["steps_total"] == 4


def test_a_resume_that_loses_state_fails(smoke, monkeypatch) -> None:
    monkeypatch.setenv("SMOKE_FORGET_OPTIMIZER", "1")
    code, report, _, _ = smoke(target("resumable.py:train"), "--interrupt", "2")
    assert code == 1
    detail = check(report, "interrupted")["detail"]
    assert "differs from 4 uninterrupted steps" in detail
    assert "model['weight']" in detail


def test_interrupt_needs_steps_and_resume(smoke) -> None:
    code, report, _, _ = smoke(target("healthy.py:train_step"), "--interrupt", "1")
    assert code == 2 and report["verdict"] == "fail"
    assert check(report, "interrupted")["status"] == "skipped"
    assert "missing: resume, steps" in check(report, "interrupted")["detail"]


def test_demo_target_ramp_and_interruption(smoke, demo: Path) -> None:
    code, report, _, _ = smoke(f"{demo / 'smoke_target.py'}:train_steps",
                               "--batch-sizes", "1,8,32", "--interrupt", "1")
    assert code == 0, report["checks"]
    assert [b["batch_size"] for b in report["batches"] if b["status"] == "ok"] == [1, 8, 32]
    assert check(report, "interrupted")["status"] == "pass"
    assert report["environment"]["precision"] == {
        "default_dtype": "float32", "float32_matmul_precision": "highest", "autocast": []}


def test_mps_memory_is_the_driver_allocation(monkeypatch) -> None:
    """Emulated: nothing here runs on MPS."""
    monkeypatch.setattr(torch.mps, "driver_allocated_memory", lambda: 3 * 2**20)
    assert ramp.peak_memory(torch.device("mps")) == (3 * 2**20, "MPS driver allocated")


def test_tensors_left_on_the_cpu_name_the_users_line() -> None:
    # "meta" stands in for the accelerator: the model is there, the mask is not.
    with OpAudit(torch.device("meta")) as audit:
        weight = torch.empty(4, 4, device="meta")
        mask = torch.tril(torch.ones(4, 4))
        with pytest.raises(RuntimeError):  # meta refuses what MPS would move implicitly
            weight * mask
    assert audit.log.mixed == {"aten::mul": {"cpu+meta"}}
    frame = audit.log.frames["aten::mul"]
    assert f"{THIS_FILE}:" in frame and frame.endswith(": `weight * mask`")
    hazards = {h.subject: h for h in build_hazards(audit.log, [],
                                                  HazardContext("mps", False, None))}
    assert f"{THIS_FILE}:" in hazards["aten::mul"].detail.partition("first at ")[2]
    assert "`mask = torch.tril(torch.ones(4, 4))`" in hazards["cpu-op"].detail


def test_autocast_is_recorded() -> None:
    seen: set[str] = set()
    with AutocastWatch(torch.device("cpu"), seen):
        torch.ones(2, 2) @ torch.ones(2, 2)
        assert seen == set()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            torch.ones(2, 2) @ torch.ones(2, 2)
    assert seen == {"cpu bfloat16"}

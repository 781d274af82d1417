"""Hazards carry where they happen. Off a Mac (here: the CPU, for real) a predicted hazard has
the line of the user's code where its op first ran and the file:line of the CUD6 finding of
`cudalint check`; a finding the run did not reach is a predicted hazard of its own. On a Mac
(emulated: no Mac ran this) the target runs with PYTORCH_ENABLE_MPS_FALLBACK=0, then =1, and
each op that fell back is reported with its line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from cudalint.commands.smoke import main
from cudalint.mps_ops import load_coverage
from cudalint.report.evidence import load_run
from cudalint.runtime.smoke import devices, isolation
from cudalint.runtime.smoke.audit import OpLog
from cudalint.runtime.smoke.fallback_pair import VARIABLE
from cudalint.runtime.smoke.hazards import HazardContext, build_hazards
from cudalint.runtime.smoke.render import plain
from cudalint.runtime.smoke.report import Check, Hazard, HazardKind, Severity, SmokeReport, Status

from .helpers import hazard, target

TARGETS = "tests/runtime/smoke/targets"


def _smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str
           ) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "report.json"
    code = main([*argv, "--json", str(path)])
    capsys.readouterr()
    return code, json.loads(path.read_text())


def test_predicted_hazards_carry_the_run_line_and_the_static_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _smoke(tmp_path, capsys, target("spectral.py:spectrum"), "--in-process")
    assert code == 0
    eig = hazard(report, "aten::linalg_eig")
    assert eig["predicted"] and eig["where"][0].endswith(
        "spectral.py:11: `eigenvalues = torch.linalg.eigvals(covariance.float())`")
    assert eig["where"][1] == f"{TARGETS}/spectral.py:11 (CUD602)"
    float64 = hazard(report, "float64")
    assert float64["where"][0].endswith(
        "spectral.py:9: `features = torch.randn(6, 4, dtype=torch.float64, device=device)`")
    assert float64["where"][1] == f"{TARGETS}/spectral.py:9 (CUD601)"


def test_a_finding_the_run_did_not_reach_is_a_predicted_hazard(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _smoke(tmp_path, capsys, target("unreached_op.py:step"), "--in-process")
    assert code == 0 and report["verdict"] == "pass"  # a prediction never fails a run
    found = hazard(report, "aten::linalg_eig")
    assert (found["kind"], found["predicted"], found["count"]) == ("no-mps-kernel", True, 0)
    assert found["where"] == [f"{TARGETS}/unreached_op.py:11 (CUD602)"]
    assert found["detail"].endswith("(cudalint check CUD602; this run did not reach it)")
    # The report reads it as the static finding it is, not as what the run predicted.
    assert load_run(tmp_path / "report.json").predicted == ()


def test_the_harness_alone_reports_no_static_lines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cudalint.runtime.smoke.command import main as harness

    path = tmp_path / "report.json"
    assert harness([target("unreached_op.py:step"), "--in-process", "--json", str(path)]) == 0
    capsys.readouterr()
    assert json.loads(path.read_text())["hazards"] == []


def _fell_back_here(log: OpLog) -> None:
    log.note("aten::linalg_eig", "aten.linalg_eig.default", [], [], "mps")


def test_on_mps_an_op_without_a_kernel_falls_back_at_its_line() -> None:
    """The diagnostic run's audit, emulated: an op without an MPS kernel ran on MPS."""
    log = OpLog()
    _fell_back_here(log)
    log.devices["aten::linalg_eig"] = {"mps"}
    [found] = build_hazards(log, [], HazardContext("mps", True, load_coverage()))
    assert (found.kind, found.predicted) == (HazardKind.CPU_FALLBACK, False)
    line = _fell_back_here.__code__.co_firstlineno + 1
    assert found.where[0].endswith(f"test_fallback_pair.py:{line}: `log.note(\"aten::linalg_eig\""
                                   ", \"aten.linalg_eig.default\", [], [], \"mps\")`")


def _child_report(value: str) -> dict[str, Any]:
    """What a child on a Mac writes with the fallback off ("0": the op raises) or on ("1")."""
    where = ["model.py:12: `eig = torch.linalg.eigvals(cov)`"]
    report = SmokeReport(target="t.py:f", device="mps")
    report.environment = {VARIABLE: {"value_torch_saw": value, "enabled": value == "1"}}
    if value == "0":
        report.checks = [Check("run", Status.FAIL, "NotImplementedError: ...")]
        report.error = {"error_type": "NotImplementedError", "message": "The operator "
                        "'aten::linalg_eig' is not currently implemented for the MPS device",
                        "location": "model.py:12"}
        report.hazards = [Hazard(HazardKind.NO_MPS_KERNEL, Severity.ERROR, "raised",
                                 op="aten::linalg_eig", where=tuple(where))]
    else:
        report.checks = [Check("run", Status.PASS, "returned")]
        report.hazards = [Hazard(HazardKind.CPU_FALLBACK, Severity.WARNING, "fell back",
                                 op="aten::linalg_eig", count=2, where=tuple(where))]
    return report.to_dict()


@pytest.mark.parametrize(("extra", "code", "verdict"), [([], 1, "fail"),
                                                         (["--allow-fallback"], 0, "pass")])
def test_on_a_mac_the_run_is_a_pair(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch, extra: list[str],
                                    code: int, verdict: str) -> None:
    seen: list[str | None] = []

    def child(argv: list[str], timeout: float, held: object = None) -> isolation.ChildResult:
        seen.append(os.environ.get(VARIABLE))
        return isolation.ChildResult(0, "", _child_report(os.environ[VARIABLE]))

    monkeypatch.setattr(devices, "resolve_device", lambda name: torch.device("mps"))
    monkeypatch.setattr(isolation, "run_child", child)
    monkeypatch.setenv(VARIABLE, "1")
    got, report = _smoke(tmp_path, capsys, target("healthy.py:train_step"), *extra)
    assert (got, report["verdict"], seen) == (code, verdict, ["0", "1"])
    assert os.environ[VARIABLE] == "1"  # restored
    pair = report["fallback_pair"]
    assert pair["off"]["verdict"] == "fail" and pair["off"]["value_torch_saw"] == "0"
    assert pair["off"]["error"] == ("NotImplementedError: The operator 'aten::linalg_eig' is not "
                                    "currently implemented for the MPS device at model.py:12")
    assert pair["on"] == {"verdict": "pass", "value_torch_saw": "1", "error": None, "ops": [
        {"op": "aten::linalg_eig", "count": 2,
         "where": "model.py:12: `eig = torch.linalg.eigvals(cov)`"}]}
    assert ("fallback pair: PYTORCH_ENABLE_MPS_FALLBACK=0: fail, raised: aten::linalg_eig x1 at "
            "model.py:12: `eig = torch.linalg.eigvals(cov)`; PYTORCH_ENABLE_MPS_FALLBACK=1: "
            "pass, fell back: aten::linalg_eig x2 at model.py:12") in plain(
                SmokeReport.from_dict(report))


def test_off_a_mac_the_run_is_single(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def child(argv: list[str], timeout: float, held: object = None) -> isolation.ChildResult:
        calls.append(argv)
        return isolation.ChildResult(0, "", _child_report("1") | {"device": "cpu"})

    monkeypatch.setattr(isolation, "run_child", child)
    got, report = _smoke(tmp_path, capsys, target("healthy.py:train_step"), "--device", "cpu")
    assert (got, len(calls)) == (0, 1) and "fallback_pair" not in report

"""`cudalint report`: findings and smoke runs turned into MPS ready / dual-track / refused."""

from __future__ import annotations

import json
from pathlib import Path

from cudalint.cli import main
from cudalint.finding import Applicability, Finding, Fix, Position, Severity
from cudalint.report.decision import Verdict, decide


def _finding(code: str, *, severity=Severity.ERROR, fixable=False, guarded=False) -> Finding:
    where = Position(1, 1)
    fix = Fix(Applicability.SAFE, "fix it") if fixable else None
    finding = Finding(code, "message", Path("train.py"), where, where, severity, fix=fix)
    return finding.with_guard() if guarded else finding


def test_only_fixable_findings_are_ready():
    decision = decide([_finding("CUD101", fixable=True), _finding("CUD102", fixable=True)])
    assert decision.verdict is Verdict.READY
    assert decision.counts["fixable"] == 2


def test_native_cuda_on_the_main_path_is_refused():
    decision = decide([_finding("CUD101", fixable=True), _finding("CUD305")])
    assert decision.verdict is Verdict.REFUSED
    assert any("CUD305" in reason for reason in decision.reasons)


def test_guarded_library_and_tooling_make_dual_track():
    assert decide([_finding("CUD201", guarded=True)]).verdict is Verdict.DUAL_TRACK
    assert decide([_finding("CUD402")]).verdict is Verdict.DUAL_TRACK
    assert decide([_finding("CUD110")]).verdict is Verdict.DUAL_TRACK  # to port by hand


def test_advisories_do_not_change_readiness():
    assert decide([_finding("CUD107", severity=Severity.INFO)]).verdict is Verdict.READY


def test_smoke_runs_weigh_in():
    passed = {"verdict": "pass", "device": "mps", "hazards": []}
    hazards = {"verdict": "pass", "device": "cpu", "hazards": [{"op": "aten::linalg_eig"}]}
    failed_mps = {"verdict": "fail", "device": "mps",
                  "checks": [{"name": "run", "status": "fail"}]}
    assert decide([], [passed]).verdict is Verdict.READY
    dual = decide([], [hazards])
    assert dual.verdict is Verdict.DUAL_TRACK and "aten::linalg_eig" in dual.reasons[0]
    refused = decide([], [failed_mps])
    assert refused.verdict is Verdict.REFUSED and "run" in refused.reasons[0]


def test_report_command_end_to_end(tmp_path, capsys):
    (tmp_path / "train.py").write_text("import torch\nmodel = Net().cuda()\n")
    (tmp_path / "ext.py").write_text("import fastattn._C\n")
    smoke = tmp_path / "smoke.json"
    smoke.write_text(json.dumps({"verdict": "pass", "device": "cpu", "hazards": []}))
    out_json = tmp_path / "decision.json"
    assert main(["report", str(tmp_path / "train.py"), "--smoke", str(smoke),
                 "--json", str(out_json)]) == 0
    assert "Decision: MPS ready" in capsys.readouterr().out
    assert json.loads(out_json.read_text())["verdict"] == "mps-ready"


def test_report_rejects_a_file_that_is_not_a_smoke_report(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert main(["report", str(tmp_path), "--smoke", str(bad)]) == 2
    assert "not a smoke report" in capsys.readouterr().err

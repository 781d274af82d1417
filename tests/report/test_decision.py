"""The decision on the three fixture projects, without and with smoke runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from cudalint.config import load_config
from cudalint.report.audit import Audit, Effort, audit
from cudalint.report.decision import SINGLE_DEVICE, Verdict, decide
from cudalint.report.evidence import Evidence, run_from_dict
from cudalint.report.html import to_html
from cudalint.report.paths import PathClass
from cudalint.report.project import describe
from cudalint.report.render import print_terminal, to_json, to_markdown

from .smoke_runs import CUDA_REFERENCE, smoke_json

FIXTURES = Path(__file__).parents[2] / "fixtures" / "report"

# Its tolerance declared in [tool.cudalint.smoke] and committed before the run.
MPS_PASS = smoke_json("mps", tolerance={"rtol": 1e-4, "atol": 1e-5, "committed": True,
                                        "source": "[tool.cudalint.smoke]", "per_output": {}})
CPU_PASS = smoke_json("cpu", skipped=("compare",))
MPS_FAIL = smoke_json("mps", failed={"compare": "2 difference(s) from the reference: logits"})
CPU_FAIL = smoke_json("cpu", failed={"run": "RuntimeError: Found no NVIDIA driver"})
# `cudalint smoke --device mps --save-reference ...`: it passed, and compared nothing.
MPS_UNCOMPARED = smoke_json("mps", skipped=("compare",), details={
    "compare": "saving a reference; pass --reference cpu to also compare with CPU"})
CPU_COMPARED = smoke_json("cpu", against=CUDA_REFERENCE)


@pytest.fixture(scope="module")
def audits() -> dict[str, Audit]:
    """Each project checked once, as it is and as the fixes would leave it."""
    return {name: audit([FIXTURES / name], load_config(FIXTURES / name), jobs=1)
            for name in ("ready", "dual_track", "refused")}


def _decide(audits: dict[str, Audit], name: str, *runs: dict[str, object]):
    return decide(audits[name], [run_from_dict(run, f"{i}.json") for i, run in enumerate(runs)],
                  project=describe(FIXTURES / name))


@pytest.mark.parametrize(("project", "runs", "verdict", "evidence"), [
    ("ready", (), Verdict.MAC_ALLOWED, Evidence.PROVISIONAL),
    ("ready", (CPU_PASS,), Verdict.MAC_ALLOWED, Evidence.PORTABLE),
    ("ready", (MPS_PASS,), Verdict.MAC_ALLOWED, Evidence.CONFIRMED),
    ("ready", (CPU_PASS, MPS_PASS), Verdict.MAC_ALLOWED, Evidence.CONFIRMED),
    ("ready", (MPS_FAIL,), Verdict.REFUSED, Evidence.SMOKE_FAILED),
    ("ready", (CPU_FAIL,), Verdict.DUAL_TRACK, Evidence.SMOKE_FAILED),
    ("dual_track", (), Verdict.DUAL_TRACK, Evidence.PROVISIONAL),
    ("dual_track", (CPU_PASS,), Verdict.DUAL_TRACK, Evidence.PORTABLE),
    ("dual_track", (MPS_PASS,), Verdict.DUAL_TRACK, Evidence.CONFIRMED),
    ("dual_track", (MPS_FAIL,), Verdict.REFUSED, Evidence.SMOKE_FAILED),
    ("refused", (), Verdict.REFUSED, Evidence.PROVISIONAL),
    ("refused", (CPU_PASS,), Verdict.REFUSED, Evidence.PROVISIONAL),
    ("refused", (MPS_PASS,), Verdict.REFUSED, Evidence.PROVISIONAL),
    ("refused", (MPS_FAIL,), Verdict.REFUSED, Evidence.SMOKE_FAILED),
])
def test_verdict_and_evidence(audits, project, runs, verdict, evidence) -> None:
    decision = _decide(audits, project, *runs)
    assert (decision.verdict, decision.evidence) == (verdict, evidence)


def test_fixable_only_project_is_provisional_mac_allowed(audits) -> None:
    decision = _decide(audits, "ready")
    assert decision.headline == "Mac allowed"
    assert decision.effort["fixable"] == 3
    assert decision.effort["by-hand"] == decision.effort["blocker"] == 0
    assert "cudalint smoke" in decision.evidence_note and "--device mps" in decision.evidence_note
    assert "3 finding(s) removed by `cudalint check --fix`" in str(decision.reasons[0])


def test_cpu_run_shows_portability_only(audits) -> None:
    decision = _decide(audits, "ready", CPU_PASS)
    assert "portable, not that MPS works" in decision.evidence_note
    assert "smoke_target.py:train_step --device mps" in decision.evidence_note


def test_confirmed_names_the_mac(audits) -> None:
    note = _decide(audits, "ready", MPS_PASS).evidence_note
    assert "passed on MPS with outputs within tolerance" in note
    assert "Apple M3 Max" in note


def test_failed_check_is_named(audits) -> None:
    decision = _decide(audits, "ready", MPS_FAIL)
    assert "check `compare` failed (results differ beyond the tolerance)" in str(
        decision.reasons[0])
    crash = _decide(audits, "ready", CPU_FAIL)
    assert "check `run` failed (the target crashed): RuntimeError" in str(crash.reasons[0])


def test_distributed_only_path_keeps_the_mac_for_single_device_work(audits) -> None:
    decision = _decide(audits, "dual_track", MPS_PASS)
    assert decision.scope == SINGLE_DEVICE
    assert decision.headline == f"dual-track: {SINGLE_DEVICE}"
    # The DDP wrapping under `if ddp:` and the torchrun launcher are distributed-only.
    distributed = {(i.where.rpartition("/")[2], i.finding.code) for i in audits["dual_track"].items
                   if i.path is PathClass.DISTRIBUTED}
    assert {("train.py:18", "CUD701"), ("train.py:31", "CUD702"),
            ("launch_multi_gpu.sh:3", "CUD502")} <= distributed
    assert all("distributed-only path" in reason.text for reason in decision.reasons)


def test_data_parallel_under_is_cuda_is_guarded_not_a_blocker(audits) -> None:
    items = [i for i in audits["dual_track"].items if i.where.endswith("model.py:27")]
    assert [(i.finding.code, i.path, i.effort) for i in items] == [
        ("CUD702", PathClass.GUARDED, Effort.GUARDED)]
    decision = _decide(audits, "dual_track")
    assert not any("model.py:27" in str(reason) for reason in decision.reasons)
    assert any("model.py:27" in str(note) and "guarded" in note.text for note in decision.notes)


def test_fixes_are_counted_and_never_by_hand(audits) -> None:
    items = audits["dual_track"].items
    efforts = {(i.where.rpartition("/")[2], i.finding.code): i.effort for i in items}
    # CUD109 carries no fix, but --fix replaces the torch.cuda.set_device call that it flags.
    assert efforts[("train.py:22", "CUD109")] is Effort.FIXABLE
    assert efforts[("train.py:22", "CUD105")] is Effort.FIXABLE
    assert efforts[("train.py:18", "CUD701")] is Effort.UNSAFE_FIXABLE
    decision = _decide(audits, "dual_track")
    assert decision.to_dict()["fixes"] == {"fix": 4, "unsafe_fixes": 2}
    assert not any("by hand" in str(reason) for reason in decision.reasons)


def test_mandatory_cuda_extension_is_refused(audits) -> None:
    decision = _decide(audits, "refused")
    codes = {reason.code for reason in decision.reasons if "native CUDA" in reason.text}
    assert codes == {"CUD301", "CUD305"}
    assert decision.reasons[0].where is not None and ":" in decision.reasons[0].where
    assert decision.effort["fixable"] == 2  # the two .cuda() calls in train.py


def test_predicted_hazards_from_a_cpu_run_make_dual_track(audits) -> None:
    hazards = smoke_json("cpu", hazards=[{"kind": "no-mps-kernel", "subject": "aten::linalg_eig",
                                          "predicted": True}])
    decision = _decide(audits, "ready", hazards)
    assert decision.verdict is Verdict.DUAL_TRACK
    assert "aten::linalg_eig" in str(decision.reasons[0])


def test_checklist(audits) -> None:
    static = {item.title.split(" (")[0]: item.status.value
              for item in _decide(audits, "refused").checklist}
    assert static["CUDA-only components identified, each with an acceptable alternative"] == "open"
    assert static["A representative run passes on the target backend"] == "unchecked"
    # refused/setup.py declares no dependencies: nothing to check, so not "done".
    assert static["Dependencies install on macOS"] == "unknown"
    confirmed = _decide(audits, "ready", MPS_PASS).checklist
    assert [item.status.value for item in confirmed] == [
        "done", "done", "done", "done", "done", "done", "done", "unchecked"]
    assert "left to you" in confirmed[-1].evidence
    assert confirmed[0].evidence == ("checked requirements.txt: no CUDA pin or CUDA-only "
                                     "package")
    failed = {item.title.split(" (")[0]: item.status.value
              for item in _decide(audits, "ready", MPS_FAIL).checklist}
    assert failed["Important outputs compared within the study's tolerance"] == "failed"


@pytest.mark.parametrize(("project", "verdict"), [
    ("ready", Verdict.MAC_ALLOWED), ("dual_track", Verdict.DUAL_TRACK)])
def test_a_stale_run_decides_nothing(audits, project, verdict) -> None:
    """A failed MPS run of another commit is shown, but refuses nothing and proves nothing."""
    stale = run_from_dict(MPS_FAIL, "old.json", ("an older or other commit",))
    decision = decide(audits[project], [stale], project=describe(FIXTURES / project))
    assert (decision.verdict, decision.evidence) == (verdict, Evidence.PROVISIONAL)
    assert decision.stale_runs == (stale,) and decision.current_runs == ()


def _every_rendering(decision) -> dict[str, str]:
    console = Console(record=True, width=200)
    print_terminal(decision, console)
    return {"terminal": console.export_text(), "markdown": to_markdown(decision),
            "html": to_html(decision), "json": to_json(decision)}


@pytest.mark.parametrize("runs", [(MPS_UNCOMPARED,), (CPU_PASS, MPS_UNCOMPARED),
                                  (CPU_COMPARED, MPS_UNCOMPARED)],
                         ids=["mps-alone", "with-cpu", "with-cpu-compared-with-cuda"])
def test_an_mps_pass_that_compared_nothing_confirms_nothing(audits, runs) -> None:
    """It ran on MPS; whether its numbers are right is unknown: never "confirmed", never
    "within tolerance", on any output."""
    decision = _decide(audits, "ready", *runs)
    assert (decision.verdict, decision.evidence) == (Verdict.MAC_ALLOWED, Evidence.PORTABLE)
    note = decision.evidence_note
    assert note.startswith("smoke smoke_target.py:train_step passed on MPS without comparing "
                           "its outputs (saving a reference; ")
    assert "its results are unchecked; confirm with a comparison: cudalint smoke" in note
    for name, text in _every_rendering(decision).items():
        assert "with outputs within tolerance" not in text, name
        assert "confirmed" not in text.lower(), name
    checklist = {item.title.split(" (")[0]: item for item in decision.checklist}
    compared = checklist["Important outputs compared within the study's tolerance"]
    assert compared.status.value == "unchecked" and "mps" not in compared.evidence.split(":")[0]
    metrics = next(row for row in decision.tested.rows if row.question == "metrics reproduce")
    assert metrics.cells["mps"].status == "not run"

"""The tested / not-tested table: the guides' five questions by device, each cell pass, fail or
not run with the runs' files and tolerance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.report.evidence import run_from_dict
from cudalint.report.tested import what_was_tested

from .smoke_runs import CUDA_REFERENCE, smoke_json

FIXTURES = Path(__file__).parents[2] / "fixtures" / "report"
COMMAND_LINE = "rtol=1e-05, atol=1e-06 (float32 outputs); given on the command line"
QUESTIONS = ["the weights load", "inference gives output", "training updates the weights",
             "resume after a save works", "metrics reproduce"]


def _statuses(table) -> dict[str, dict[str, str]]:
    return {row.question: {column: cell.status for column, cell in row.cells.items()}
            for row in table.rows}


def test_without_smoke_runs_nothing_was_tested() -> None:
    table = what_was_tested(())
    assert table.labels == ["CPU", "MPS", "CUDA reference"]
    assert [row.question for row in table.rows] == QUESTIONS
    assert all(status == "not run" for row in _statuses(table).values()
               for status in row.values())


def test_cells_of_a_cpu_run_against_the_cuda_reference_and_an_mps_run() -> None:
    cpu = run_from_dict(smoke_json("cpu", against=CUDA_REFERENCE, skipped=("checkpoint",)),
                        "smoke-cpu.json")
    mps = run_from_dict(smoke_json("mps", failed={"checkpoint": "loaded tensors on mps"}),
                        "smoke-mps.json")
    stale = run_from_dict(smoke_json("cuda"), "old-cuda.json", stale=("another project",))
    table = what_was_tested([cpu, mps, stale])
    assert table.columns == ("cpu", "mps", "cuda-reference")  # the stale CUDA run: no column
    assert _statuses(table) == {
        "the weights load": {"cpu": "not run", "mps": "fail", "cuda-reference": "not run"},
        "inference gives output": {"cpu": "pass", "mps": "pass", "cuda-reference": "pass"},
        "training updates the weights": {"cpu": "not run", "mps": "not run",
                                         "cuda-reference": "not run"},
        "resume after a save works": {"cpu": "not run", "mps": "not run",
                                      "cuda-reference": "not run"},
        "metrics reproduce": {"cpu": "pass", "mps": "pass", "cuda-reference": "pass"},
    }
    cells = {row.question: row.cells for row in table.rows}
    reference = cells["metrics reproduce"]["cuda-reference"]
    assert reference.sources == ("smoke-cpu.json",)
    assert reference.tolerance == COMMAND_LINE
    assert "cuda (NVIDIA H200), torch 2.11.0+cu130" in reference.detail
    assert "5.07e-07 (logits)" in reference.detail
    assert cells["the weights load"]["mps"].text() == (
        "fail; smoke-mps.json; rtol=1e-05, atol=1e-06 (float32 outputs); given on the command "
        "line")
    assert "outputs saved on cuda (NVIDIA H200)" in cells["inference gives output"][
        "cuda-reference"].detail
    assert cells["training updates the weights"]["cpu"].detail == "no `training` check in the run"
    assert "carries no per-step losses" in cells["training updates the weights"][
        "cuda-reference"].detail


def test_a_training_check_answers_training_on_its_device_and_against_the_reference() -> None:
    data = smoke_json("cpu", against=CUDA_REFERENCE)
    data["checks"].append({"name": "training", "status": "pass",
                           "detail": "2 AdamW step(s) over 14 parameter(s) of ResidualMLP: ..."})
    data["training"] = {"losses": [2.3, 2.1], "reference_losses": [2.3, 2.1]}
    failed = smoke_json("cpu")
    failed["checks"].append({"name": "training", "status": "fail",
                             "detail": "4 SGD step(s) ...: frozen weights: ..."})
    statuses = _statuses(what_was_tested([run_from_dict(data, "cpu.json")]))
    assert statuses["training updates the weights"] == {"cpu": "pass", "mps": "not run",
                                                        "cuda-reference": "pass"}
    statuses = _statuses(what_was_tested([run_from_dict(failed, "cpu.json")]))
    assert statuses["training updates the weights"]["cpu"] == "fail"


def test_an_interrupted_run_answers_resume() -> None:
    data = smoke_json("cpu")
    data["checks"].append({"name": "interrupted", "status": "pass", "detail": "2 steps ..."})
    table = what_was_tested([run_from_dict(data, "cpu.json")])
    assert _statuses(table)["resume after a save works"]["cpu"] == "pass"


def test_a_check_asked_for_and_not_run_says_so() -> None:
    data = smoke_json("cpu")
    data["checks"].append({"name": "killed", "status": "skipped",
                           "detail": "train needs `steps` and `checkpoint_dir` parameters"})
    data["requested"], data["verdict"] = {"killed": "--kill-after 1"}, "fail"
    row = next(row for row in what_was_tested([run_from_dict(data, "cpu.json")]).rows
               if row.question == "resume after a save works")
    assert row.cells["cpu"].status == "not run"
    assert row.cells["cpu"].detail == ("requested (--kill-after 1) and not run: train needs "
                                       "`steps` and `checkpoint_dir` parameters")


def test_a_cuda_run_gets_its_own_column() -> None:
    table = what_was_tested([run_from_dict(smoke_json("cuda"), "cuda.json")])
    assert table.labels == ["CPU", "MPS", "CUDA", "CUDA reference"]
    assert _statuses(table)["inference gives output"]["cuda"] == "pass"


@pytest.mark.parametrize("with_run", [False, True])
def test_the_table_in_every_format(tmp_path: Path, capsys, with_run: bool) -> None:
    project = FIXTURES / "ready"
    smoke = tmp_path / "smoke-cpu.json"
    smoke.write_text(json.dumps(smoke_json("cpu", root=project, against=CUDA_REFERENCE)))
    given = ["--smoke", str(smoke)] if with_run else []
    outputs = {}
    for output_format in ("text", "json", "markdown", "html"):
        assert main(["report", str(project), *given, "--output-format", output_format]) == 0
        outputs[output_format] = capsys.readouterr().out
    rows = json.loads(outputs["json"])["tested"]["rows"]
    assert [row["question"] for row in rows] == QUESTIONS
    inference = rows[1]["cells"]["cpu"]
    if with_run:
        assert inference == {"status": "pass", "sources": [str(smoke)],
                             "tolerance": COMMAND_LINE,
                             "detail": "run ok"}
        line = (f"inference gives output: CPU: pass; {smoke}; rtol=1e-05, atol=1e-06 "
                "(float32 outputs); given on the command line | MPS: not run | CUDA reference: "
                "pass; " + str(smoke))
        assert line in outputs["text"]
        assert (f"| inference gives output | pass; {smoke}; rtol=1e-05, atol=1e-06 "
                "(float32 outputs); given on the command line | not run | pass; "
                in outputs["markdown"])
    else:
        assert inference["status"] == "not run"
        assert ("inference gives output: CPU: not run | MPS: not run | CUDA reference: not run"
                in outputs["text"])
        assert "| inference gives output | not run | not run | not run |" in outputs["markdown"]
    assert "## Tested / not tested" in outputs["markdown"]
    assert '<table id="tested-table">' in outputs["html"]
    assert outputs["html"].count('data-column="cuda-reference"') == 5


CPU_REFERENCE = ("the reference (cpu (x86_64), torch 2.13.0, Linux, saved "
                 "2026-11-29T19:15:05+00:00)")


def test_a_reference_saved_on_the_cpu_fills_no_cuda_reference_cell() -> None:
    """Issue 45, item 5: only a reference saved on CUDA answers the CUDA reference column."""
    mps = run_from_dict(smoke_json("mps", against=CPU_REFERENCE), "smoke-mps.json")
    assert mps.comparison() is not None and mps.comparison().device == "cpu"  # type: ignore[union-attr]
    table = what_was_tested([mps])
    cells = {row.question: row.cells["cuda-reference"] for row in table.rows}
    assert {question: cell.status for question, cell in cells.items()} == dict.fromkeys(
        QUESTIONS, "not run")
    assert cells["metrics reproduce"].detail == "no run compared with a reference saved on CUDA"
    # The same run against a reference saved on CUDA does fill it.
    cuda = run_from_dict(smoke_json("mps", against=CUDA_REFERENCE), "smoke-mps.json")
    assert _statuses(what_was_tested([cuda]))["metrics reproduce"]["cuda-reference"] == "pass"


def test_a_check_that_ended_in_warn_answers_its_question() -> None:
    """Issue 45, item 6: a check that ran and warned (repeats close but not identical, a NaN
    in an output) ran: its cell is not "not run"."""
    data = smoke_json("cpu")
    for check in data["checks"]:
        if check["name"] in ("run", "checkpoint"):
            check["status"] = "warn"
            check["detail"] = f"{check['name']} ran, with a warning"
    table = what_was_tested([run_from_dict(data, "smoke-cpu.json")])
    cells = {row.question: row.cells["cpu"] for row in table.rows}
    assert cells["inference gives output"].status == "pass"
    assert cells["inference gives output"].detail == "run ran, with a warning"
    assert cells["the weights load"].status == "pass"
    assert cells["the weights load"].sources == ("smoke-cpu.json",)

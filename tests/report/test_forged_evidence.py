"""Evidence that describes no real run is refused (issue 39; issue 44, items 8 and 13): a smoke
file of the right schema whose machine is missing, whose device its machine contradicts, whose
checks smoke never writes, whose statuses contradict its verdict or its own numbers, or whose
fields hold the wrong types, stops the report with one line, exit 2 (never an internal error).

Each forged file starts from a valid run (`smoke_runs.smoke_json`) and changes one thing; the
valid run itself is accepted (`test_the_unforged_run_is_evidence`), so each refusal is the
forgery's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cudalint.cli import main
from cudalint.runtime.smoke import identity

from .smoke_runs import CUDA_REFERENCE, smoke_json

READY = Path(__file__).parents[2] / "fixtures" / "report" / "ready"


def _report(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: object,
            *argv: str) -> tuple[int, str, str]:
    path = tmp_path / "run.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    code = main(["report", str(READY), "--smoke", str(path), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: object) -> str:
    code, out, err = _report(tmp_path, capsys, data, "--output-format", "json")
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and err.startswith(
        f"cudalint report: error: {tmp_path / 'run.json'}: not a"), err
    assert "internal error" not in err
    return err


def _mps(**changes: Any) -> dict[str, Any]:
    return smoke_json("mps", root=READY) | changes


def _check(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(check for check in data["checks"] if check["name"] == name)


def test_the_unforged_run_is_evidence(tmp_path: Path, capsys) -> None:
    code, out, err = _report(tmp_path, capsys, _mps(), "--output-format", "json")
    assert code == 0, err
    assert json.loads(out)["evidence"] == "confirmed-on-mps"


# -- the machine: missing, empty, or one the device contradicts --------------------------------

@pytest.mark.parametrize(("field", "value", "said"), [
    ("environment", {}, "(environment is empty)"),
    ("environment", None, "(environment is null, not an object)"),
    ("packages", {}, "(packages is empty)"),
    ("packages", [], "(packages is a list of 0, not an object)"),
], ids=["empty-environment", "null-environment", "empty-packages", "packages-list"])
def test_a_run_without_its_machine_or_packages_is_refused(tmp_path: Path, capsys, field: str,
                                                          value: object, said: str) -> None:
    assert said in _refused(tmp_path, capsys, _mps(**{field: value}))


@pytest.mark.parametrize("field", ["environment", "packages"])
def test_a_run_missing_its_machine_or_packages_is_refused(tmp_path: Path, capsys,
                                                          field: str) -> None:
    data = _mps()
    del data[field]
    assert f"({field} is missing)" in _refused(tmp_path, capsys, data)


def test_a_machine_that_names_no_python_or_torch_is_refused(tmp_path: Path, capsys) -> None:
    data = _mps()
    del data["environment"]["torch"]
    assert "(environment.torch is missing)" in _refused(tmp_path, capsys, data)


def test_mps_on_a_linux_machine_is_refused(tmp_path: Path, capsys) -> None:
    """The issue's forgery: a run on Linux relabelled `"device": "mps"`."""
    data = smoke_json("cpu", root=READY) | {"device": "mps"}
    data["environment"]["device"] = "mps"
    err = _refused(tmp_path, capsys, data)
    assert "device 'mps' on Linux x86_64, which is not macOS on Apple silicon" in err


def test_mps_on_an_intel_mac_is_refused(tmp_path: Path, capsys) -> None:
    data = _mps()
    data["environment"]["machine"] = "x86_64"
    assert "device 'mps' on Darwin x86_64, which is not macOS" in _refused(tmp_path, capsys, data)


@pytest.mark.parametrize("flag", ["mps_available", "mps_built"])
def test_mps_where_mps_was_not_available_is_refused(tmp_path: Path, capsys, flag: str) -> None:
    data = _mps()
    data["environment"][flag] = False
    assert "where MPS was not available" in _refused(tmp_path, capsys, data)


def test_a_device_other_than_its_environments_is_refused(tmp_path: Path, capsys) -> None:
    data = _mps()
    data["environment"]["device"] = "cpu"
    assert "device 'mps', but its environment says 'cpu'" in _refused(tmp_path, capsys, data)


def test_cuda_where_cuda_was_not_available_is_refused(tmp_path: Path, capsys) -> None:
    data = smoke_json("cuda", root=READY)
    data["environment"]["cuda_available"] = False
    assert "device 'cuda' on Linux x86_64 where CUDA was not available" in _refused(
        tmp_path, capsys, data)


# -- checks smoke never writes, statuses that contradict the verdict or the numbers ------------

def test_a_check_smoke_never_writes_is_refused(tmp_path: Path, capsys) -> None:
    data = _mps()
    data["checks"].append({"name": "security-audit", "status": "pass", "detail": "all good"})
    err = _refused(tmp_path, capsys, data)
    assert "checks[7].name is the string 'security-audit', not one of 'environment'" in err


def test_a_check_written_twice_is_refused(tmp_path: Path, capsys) -> None:
    data = _mps()
    data["checks"].append(dict(_check(data, "compare")))
    assert "the check 'compare' twice" in _refused(tmp_path, capsys, data)


def test_a_status_smoke_never_writes_is_refused(tmp_path: Path, capsys) -> None:
    data = _mps()
    _check(data, "compare")["status"] = "passed"
    assert "checks[4].status is the string 'passed', not one of 'pass', 'fail', 'warn', " \
           "'skipped'" in _refused(tmp_path, capsys, data)


def test_a_pass_verdict_over_a_failed_check_is_refused(tmp_path: Path, capsys) -> None:
    data = smoke_json("mps", root=READY, failed={"ops": "aten::foo fell back to the CPU"})
    data["verdict"] = "pass"
    assert "verdict 'pass' with the check 'ops' failed" in _refused(tmp_path, capsys, data)


def test_a_fail_verdict_with_every_check_passed_is_refused(tmp_path: Path, capsys) -> None:
    assert "verdict 'fail' with no check failed" in _refused(tmp_path, capsys,
                                                             _mps(verdict="fail"))


def test_a_failed_run_with_its_statuses_flipped_to_pass_is_refused(tmp_path: Path,
                                                                   capsys) -> None:
    """A crashed run edited to pass: verdict and every status say pass, but the crash it
    recorded is still there."""
    crashed = smoke_json("mps", root=READY, failed={"run": "RuntimeError: boom"})
    crashed["error"] = {"phase": "run", "error_type": "RuntimeError", "message": "boom",
                        "location": "train.py:3", "code": "boom()", "innermost": None,
                        "innermost_code": None, "output_tail": ""}
    flipped = json.loads(json.dumps(crashed))
    flipped["verdict"] = "pass"
    for check in flipped["checks"]:
        check["status"] = "pass"
    err = _refused(tmp_path, capsys, flipped)
    assert "the target crashed ('error' is set), but the check 'run' is 'pass'" in err
    # Unflipped, it is a failed run, which the report takes as one.
    code, out, _ = _report(tmp_path, capsys, crashed, "--output-format", "json")
    assert (code, json.loads(out)["evidence"]) == (0, "smoke-failed")


FAILURES = {
    "compare": "2 difference(s) from the same run on cpu: logits: 3 of 8 elements differ beyond "
               "rtol=1.3e-06, atol=1e-05; max abs diff 0.5 at [0, 1] (0.1 vs 0.6)",
    "determinism": "repeat 1 with the same seed differs: loss: 0.5 here, 0.25 in the reference",
    "checkpoint": "torch.save then torch.load(map_location='cpu', weights_only=True) failed: "
                  "UnpicklingError: Weights only load failed",
}


@pytest.mark.parametrize("name", sorted(FAILURES))
@pytest.mark.parametrize("status", ["pass", "warn"])
def test_a_failed_check_flipped_to_pass_is_refused(tmp_path: Path, capsys, name: str,
                                                   status: str) -> None:
    """A failed check whose status (and the verdict) was edited: its detail still says how it
    failed, in the check's own words."""
    failed = smoke_json("mps", root=READY, failed={name: FAILURES[name]})
    code, out, _ = _report(tmp_path, capsys, failed, "--output-format", "json")
    assert (code, json.loads(out)["evidence"]) == (0, "smoke-failed")  # as written: a failure
    _check(failed, name)["status"] = status
    failed["verdict"] = "pass"
    err = _refused(tmp_path, capsys, failed)
    assert f"the check {name!r} is {status!r}, but its detail is a failure's" in err


def test_the_failure_words_are_those_the_compare_check_writes() -> None:
    import torch

    from cudalint.runtime.smoke.checks import reference_check
    from cudalint.runtime.smoke.compare import Tolerance
    from cudalint.runtime.smoke.outputs import Leaf

    failed = reference_check([Leaf("x", torch.ones(2))], [Leaf("x", torch.zeros(2))],
                             Tolerance(), "the same run on cpu")
    assert failed.status.value == "fail"
    assert identity.FAILURE_WORDS["compare"].search(failed.detail)


def test_an_error_hazard_under_an_ops_check_that_did_not_fail_is_refused(tmp_path: Path,
                                                                          capsys) -> None:
    hazard = {"kind": "no-mps-kernel", "severity": "error", "subject": "aten::linalg_eig",
              "op": "aten::linalg_eig", "dtype": None, "predicted": False, "count": 1,
              "detail": "raised", "where": []}
    data = smoke_json("mps", root=READY, hazards=[hazard], failed={"ops": "hazards: ..."})
    code, _, err = _report(tmp_path, capsys, data, "--output-format", "json")
    assert code == 0, err
    _check(data, "ops")["status"] = "pass"
    data["verdict"] = "pass"
    assert ("a hazard of severity 'error' (aten::linalg_eig), but the check 'ops' is 'pass'"
            in _refused(tmp_path, capsys, data))


def test_a_passing_compare_whose_difference_exceeds_its_tolerance_is_refused(
        tmp_path: Path, capsys) -> None:
    """The compare check writes the most its tolerance allows where the largest difference is
    (atol + rtol * the output's largest |reference|): a pass above it was not written by it."""
    words = (f"all 2 outputs match {CUDA_REFERENCE} within tolerance; largest abs diff {{}} "
             "(logits), at most 2.3e-05 allowed there")
    honest = smoke_json("mps", root=READY, against=CUDA_REFERENCE,
                        details={"compare": words.format("1.9e-05")})
    code, _, err = _report(tmp_path, capsys, honest, "--output-format", "json")
    assert code == 0, err
    forged = smoke_json("mps", root=READY, against=CUDA_REFERENCE,
                        details={"compare": words.format("0.41")})
    err = _refused(tmp_path, capsys, forged)
    assert ("the check 'compare' passed with a largest difference of 0.41 (logits), more than "
            "the 2.3e-05 its tolerance allows") in err


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_passing_compare_with_no_finite_difference_is_refused(tmp_path: Path, capsys,
                                                                value: str) -> None:
    data = smoke_json("mps", root=READY, details={
        "compare": f"all 2 outputs match the same run on cpu within tolerance; largest abs "
                   f"diff {value} (logits)"})
    assert f"passed with a largest difference of {value!r}" in _refused(tmp_path, capsys, data)


# -- wrong inner types (issue 44, item 13) -----------------------------------------------------

WRONG_TYPES = [
    ("hazards", 5, "(hazards is 5, not a list)"),
    ("hazards", [5], "(hazards[0] is 5, not an object)"),
    ("hazards", [{"kind": "cpu-op", "count": "many"}],
     "(hazards[0].count is the string 'many', not a whole number from 0 up)"),
    ("tolerance", {"rtol": None, "atol": None, "source": "default", "per_output": 5},
     "(tolerance.per_output is 5, not an object)"),
    ("tolerance", {"rtol": None, "atol": None, "source": "default",
                   "per_output": {"logits": {"rtol": "1e-3", "atol": None}}},
     "(tolerance.per_output.logits.rtol is the string '1e-3', not a finite number from 0 up "
     "or null)"),
    ("tolerance", {"rtol": True, "atol": None, "source": "x", "per_output": {}},
     "(tolerance.rtol is true, not a finite number from 0 up or null)"),
    ("tolerance", {"rtol": -1e-5, "atol": None, "source": "x", "per_output": {}},
     "(tolerance.rtol is -1e-05, not a finite number from 0 up or null)"),
    ("checks", [5], "(checks[0] is 5, not an object)"),
    ("checks", [{"name": "run", "status": "pass"}], "(checks[0].detail is missing)"),
    ("ops", {"counts": {"aten::add": "3"}},
     "(ops.counts['aten::add'] is the string '3', not a whole number from 0 up)"),
    ("error", "boom", "(error is the string 'boom', not an object)"),
    ("files", {"train.py": 5}, "(files['train.py'] is 5, not a string (a sha256 in hex))"),
    ("project", {"name": "ready", "root": "/x", "commit": 7, "dirty": None},
     "(project.commit is 7, not a string or null)"),
    ("environment", {"python": 3.12, "os": "Darwin", "machine": "arm64", "torch": "2.13",
                     "device": "mps"}, "(environment.python is 3.12, not a string)"),
    ("device", "tpu", "(device is the string 'tpu', not a string (cpu, mps or cuda))"),
    ("warnings", "careful", "(warnings is the string 'careful', not a list)"),
]


@pytest.mark.parametrize(("field", "value", "said"), WRONG_TYPES,
                         ids=[f"{field}-{index}" for index, (field, _, _) in
                              enumerate(WRONG_TYPES)])
def test_a_field_of_the_wrong_inner_type_is_one_line(tmp_path: Path, capsys, field: str,
                                                     value: object, said: str) -> None:
    assert said in _refused(tmp_path, capsys, _mps(**{field: value}))


@pytest.mark.parametrize("bare", ["NaN", "Infinity", "-Infinity"])
def test_a_tolerance_that_is_no_finite_number_is_refused(tmp_path: Path, capsys,
                                                         bare: str) -> None:
    """Python's JSON reader takes bare NaN and Infinity; the report must not, nor write them
    into its own JSON (which would then be no JSON)."""
    text = json.dumps(_mps(), allow_nan=False).replace('"rtol": 1e-05', f'"rtol": {bare}')
    assert bare in text
    err = _refused(tmp_path, capsys, text)
    assert f"(tolerance.rtol is {bare}, not a finite number from 0 up or null)" in err
    assert not (tmp_path / "sheet.json").exists()


def test_a_number_of_more_digits_than_python_reads_is_one_line(tmp_path: Path,
                                                                capsys) -> None:
    text = json.dumps(_mps(ops={"total": 1})).replace('"total": 1', '"total": ' + "9" * 5000)
    err = _refused(tmp_path, capsys, text)
    assert "Exceeds the limit (4300 digits)" in err


def test_the_json_sheet_is_strict_json(tmp_path: Path, capsys) -> None:
    code, out, _ = _report(tmp_path, capsys, _mps(), "--output-format", "json")
    assert code == 0
    json.loads(out, parse_constant=lambda name: pytest.fail(f"bare {name} in the sheet"))


# -- escapes in the evidence, bounded hashing (issue 44, items 8 and 13) -----------------------

ESCAPE = "\x1b]0;pwned\x07\x1b[2J"


@pytest.mark.parametrize("output_format", ["text", "markdown"])
def test_terminal_escapes_in_a_file_name_are_shown_escaped(tmp_path: Path, capsys,
                                                           output_format: str) -> None:
    """A file name in the evidence that sets the terminal's title and clears the screen is
    printed spelled out, as the HTML sheet escapes markup."""
    data = smoke_json("mps", root=READY, target=f"evil{ESCAPE}.py:step",
                      files={f"model{ESCAPE}.py": "0" * 64})
    code, out, err = _report(tmp_path, capsys, data, "--output-format", output_format)
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert "model\\x1b]0;pwned\\x07\\x1b[2J.py is gone" in out
    assert "evil\\x1b]0;pwned" in out


def test_one_file_named_many_ways_is_hashed_once(tmp_path: Path, capsys,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data.bin").write_bytes(b"weights" * 1000)
    (tmp_path / "sub").mkdir()
    names = ["data.bin", "./data.bin", "sub/../data.bin", ".//data.bin", "./sub/../data.bin"]
    data = smoke_json("cpu", files=dict.fromkeys(names, "0" * 64))
    opened: list[str] = []
    real = identity.chunks

    def counting(path: Path | str):  # type: ignore[no-untyped-def]
        opened.append(str(path))
        return real(path)

    monkeypatch.setattr(identity, "chunks", counting)
    reasons = identity.matches(data, tmp_path)
    assert opened == [str(tmp_path.resolve() / "data.bin")]
    assert reasons[-5:] == [f"{name} changed since the run" for name in names]


def test_a_list_of_too_many_files_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    files = {f"missing/{index}.py": "0" * 64 for index in range(160_000)}
    err = _refused(tmp_path, capsys, _mps(files=files))
    assert "(files holds 160,000 entries, more than the 10,000 a smoke run writes)" in err


def test_many_gone_files_are_counted_not_listed(tmp_path: Path) -> None:
    files = {f"missing/{index}.py": "0" * 64 for index in range(2_000)}
    reasons = identity.matches(smoke_json("cpu", files=files), tmp_path)
    assert reasons[-6:] == [*(f"missing/{index}.py is gone" for index in range(5)),
                            "1,995 more files are gone"]


@pytest.mark.parametrize("output_format", ["text", "markdown", "html"])
def test_every_sheet_says_whose_word_a_run_is_and_shows_its_machine(
        tmp_path: Path, capsys, output_format: str) -> None:
    from cudalint.report.evidence import MACHINE_NOTE

    code, out, err = _report(tmp_path, capsys, _mps(), "--output-format", output_format)
    assert code == 0, err
    assert "Each run is reported by the machine that ran it" in MACHINE_NOTE
    assert MACHINE_NOTE in out
    assert "Apple M3 Max, Darwin 15.1 arm64, torch 2.13.0, Python 3.12.4" in out


# -- issue 39's sections: requested checks, the training check, the differences ----------------

TRAINING_PASS = ("3 AdamW step(s) over 4 parameter(s) of TinyNet: loss 2.3 → 1.9 → 1.2, every "
                 "parameter it reaches got a gradient and changed")


def _trained(losses: list[Any], status: str = "pass", detail: str = TRAINING_PASS,
             **changes: Any) -> dict[str, Any]:
    data = _mps(**changes)
    data["checks"].insert(4, {"name": "training", "status": status, "detail": detail})
    data["training"] = {"optimizer": "AdamW", "model": "TinyNet", "parameters": 4,
                        "steps": len(losses), "backwards": len(losses), "losses": losses}
    return data


def _row(output: str = "logits", max_abs: Any = 5.07e-07, *, within: bool = True,
         rtol: float | None = 1.3e-06, atol: float | None = 1e-05) -> dict[str, Any]:
    return {"output": output, "dtype": "float32", "rtol": rtol, "atol": atol,
            "max_abs": max_abs, "max_rel": 1e-07, "within": within}


def test_a_run_with_issue_39s_sections_is_evidence(tmp_path: Path, capsys) -> None:
    """A training check, the outputs' differences, the requested checks, the tolerance's
    float32 pair and the findings out of reach, as smoke writes them, are read."""
    data = _trained([2.3, 1.9, 1.2], requested={"compare": "--reference cpu"},
                    differences=[_row(), _row("loss", 0.0)],
                    elsewhere={"findings": 2, "detail": "not this run's"})
    data["tolerance"] |= {"float32": {"rtol": 1.3e-06, "atol": 1e-05}, "committed": None}
    code, out, err = _report(tmp_path, capsys, data, "--output-format", "json")
    assert code == 0, err
    assert json.loads(out)["evidence"] == "confirmed-on-mps"


def test_a_fail_verdict_from_a_requested_check_not_run_is_evidence(tmp_path: Path,
                                                                   capsys) -> None:
    """`--kill-after 1` on a target that cannot be resumed: no check failed, the verdict is
    fail (exit 2) because the check asked for did not run. That is a real run; the same file
    with the verdict edited to pass is not."""
    data = _mps(verdict="fail", requested={"killed": "--kill-after 1"})
    data["checks"].append({"name": "killed", "status": "skipped",
                           "detail": "the target saves no checkpoint"})
    code, out, err = _report(tmp_path, capsys, data, "--output-format", "json")
    assert code == 0, err
    assert json.loads(out)["evidence"] == "smoke-failed"
    data["verdict"] = "pass"
    assert ("verdict 'pass' with the check 'killed' asked for (--kill-after 1) and not carried "
            "out") in _refused(tmp_path, capsys, data)


def test_a_fail_verdict_with_a_requested_check_that_ran_is_refused(tmp_path: Path,
                                                                   capsys) -> None:
    data = _mps(verdict="fail", requested={"compare": "--reference cpu"})
    assert "verdict 'fail' with no check failed and none asked for left unrun" in _refused(
        tmp_path, capsys, data)


@pytest.mark.parametrize(("row", "said"), [
    (_row(max_abs=0.41, within=False), "largest difference of 0.41 (logits), beyond the rtol "
                                       "1.3e-06, atol 1e-05 applied to it"),
    (_row(max_abs="inf"), "largest difference of inf (logits)"),
    (_row(max_abs=0.5, rtol=0.0, atol=1e-3), "largest difference of 0.5 (logits), beyond the "
                                             "rtol 0.0, atol 0.001"),
    (_row(max_abs=1.0, rtol=None, atol=None), "largest difference of 1.0 (logits), beyond the "
                                              "rtol None, atol None"),
], ids=["not-within", "infinite", "absolute-only", "exact"])
def test_a_passing_compare_whose_differences_exceed_their_tolerance_is_refused(
        tmp_path: Path, capsys, row: dict[str, Any], said: str) -> None:
    """The structured `differences` say what the compare applied to each output: a pass with
    an output beyond it was edited, whatever its detail says."""
    err = _refused(tmp_path, capsys, _mps(differences=[_row("loss", 0.0), row]))
    assert f"the check 'compare' passed with a {said}" in err


def test_a_failed_compare_with_an_output_beyond_its_tolerance_is_evidence(tmp_path: Path,
                                                                          capsys) -> None:
    data = smoke_json("mps", root=READY, failed={"compare": FAILURES["compare"]})
    data["differences"] = [_row(max_abs=0.5, within=False)]
    code, out, err = _report(tmp_path, capsys, data, "--output-format", "json")
    assert (code, json.loads(out)["evidence"]) == (0, "smoke-failed"), err


def test_a_passing_training_check_whose_loss_went_up_is_refused(tmp_path: Path,
                                                                capsys) -> None:
    assert ("the check 'training' passed, but its loss went from 1.2 to 2.3 over 3 steps"
            in _refused(tmp_path, capsys, _trained([1.2, 1.9, 2.3])))
    assert "the check 'training' passed with a loss that is no finite number" in _refused(
        tmp_path, capsys, _trained([2.3, "nan", 1.2]))


@pytest.mark.parametrize("detail", [
    "3 AdamW step(s) over 4 parameter(s) of TinyNet: zero gradients at every step: fc.weight",
    "3 SGD step(s) over 2 parameter(s): constant loss: 0 at each of the 3 steps",
    "3 SGD step(s) over 2 parameter(s): NaN loss at step 2 (of 3)",
    "3 SGD step(s) over 2 parameter(s): frozen weights: 3 step(s) changed no value of w",
])
def test_a_failed_training_check_flipped_to_pass_is_refused(tmp_path: Path, capsys,
                                                            detail: str) -> None:
    data = _trained([2.3, 1.9, 1.2], detail=detail)
    assert "the check 'training' is 'pass', but its detail is a failure's" in _refused(
        tmp_path, capsys, data)


def test_the_failure_words_are_those_the_training_check_writes() -> None:
    """The constant-loss failure as training.training_check words it, and its pass, which
    the words must not take for a failure."""
    from cudalint.runtime.smoke.training import Run, Step, TrainingWatch, training_check

    def watch(losses: list[float]) -> TrainingWatch:
        made = TrainingWatch()
        made.runs[1] = Run("SGD", [7], {7: "w"}, "Net",
                           [Step(loss, {7: "ok"}, {7}, {7}) for loss in losses])
        return made

    failed = training_check(watch([0.5, 0.5, 0.5]))
    passed = training_check(watch([0.9, 0.5, 0.2]))
    assert (failed.status.value, passed.status.value) == ("fail", "pass")
    assert identity.FAILURE_WORDS["training"].search(failed.detail)
    assert not identity.FAILURE_WORDS["training"].search(passed.detail)


SECTION_TYPES = [
    ("requested", {"security-audit": "--audit"},
     "(requested has the key 'security-audit', not the name of a check smoke writes)"),
    ("requested", {"killed": 1}, "(requested.killed is 1, not a string)"),
    ("training", {"optimizer": "SGD", "steps": 2, "losses": ["a lot"]},
     "(training.losses[0] is the string 'a lot', not a finite number, 'nan', 'inf', '-inf' or "
     "null)"),
    ("training", {"optimizer": "SGD", "steps": -1, "losses": []},
     "(training.steps is -1, not a whole number from 0 up)"),
    ("differences", [{"output": "logits"}], "(differences[0].within is missing)"),
    ("differences", [_row(max_abs=-1.0)], "(differences[0].max_abs is -1.0, not a finite "
                                          "number from 0 up, 'nan', 'inf' or null)"),
    ("differences", [_row(rtol="1e-5")], "(differences[0].rtol is the string '1e-5', not a "
                                         "finite number from 0 up or null)"),
    ("elsewhere", {"findings": "two"}, "(elsewhere.findings is the string 'two', not a whole "
                                       "number from 0 up)"),
    ("tolerance", {"rtol": None, "atol": None, "source": "dtype defaults", "per_output": {}},
     "(tolerance.source is the string 'dtype defaults', not one of 'default', 'command line', "
     "'[tool.cudalint.smoke]')"),
    ("tolerance", {"rtol": None, "atol": None, "source": "default", "per_output": {},
                   "float32": {"rtol": None, "atol": 1e-5}},
     "(tolerance.float32.rtol is null, not a finite number from 0 up)"),
    ("tolerance", {"rtol": 1e-4, "atol": None, "source": "[tool.cudalint.smoke]",
                   "per_output": {}, "committed": "yes"},
     "(tolerance.committed is the string 'yes', not true or false or null)"),
]


@pytest.mark.parametrize(("field", "value", "said"), SECTION_TYPES,
                         ids=[f"{field}-{index}" for index, (field, _, _) in
                              enumerate(SECTION_TYPES)])
def test_issue_39s_sections_of_the_wrong_type_are_one_line(tmp_path: Path, capsys, field: str,
                                                           value: object, said: str) -> None:
    assert said in _refused(tmp_path, capsys, _mps(**{field: value}))

"""`cudalint smoke` end to end on CPU: exit codes, checks, hazards and references."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.runtime.smoke.command import TORCH_MISSING, main

from .helpers import check, hazard, subprocess_env, target


def test_healthy_training_step_passes(smoke) -> None:
    code, report, out, _ = smoke(target("healthy.py:train_step"), "--repeat", "1")
    assert code == 0
    assert report["verdict"] == "pass"
    assert report["device"] == "cpu"
    assert [c["name"] for c in report["checks"]] == [
        "environment", "transfer", "run", "ops", "training", "compare", "determinism",
        "checkpoint"]
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses == {"environment": "pass", "transfer": "pass", "run": "pass", "ops": "pass",
                        "training": "pass", "compare": "skipped", "determinism": "pass",
                        "checkpoint": "pass"}
    assert "batch_size=4" in check(report, "run")["detail"]
    assert report["hazards"] == []
    # Forward and backward ops of a linear layer were seen.
    assert report["ops"]["counts"]["aten::addmm"] >= 2
    assert report["ops"]["counts"]["aten::mm"] >= 2
    assert report["ops"]["devices"]["aten::addmm"] == ["cpu"]
    assert report["environment"]["torch"].startswith("2.")
    assert "verdict: pass" in out


def test_returned_module_is_checkpointed(smoke) -> None:
    code, report, _, _ = smoke(target("healthy.py:trained_model"))
    assert code == 0
    detail = check(report, "checkpoint")["detail"]
    assert check(report, "checkpoint")["status"] == "pass"
    assert "state_dict" in detail
    assert "weights_only=True" in detail


def test_float64_and_eig_are_predicted_hazards(smoke) -> None:
    code, report, out, _ = smoke(target("spectral.py:spectrum"))
    assert code == 0, "predicted hazards warn, they do not fail"
    assert check(report, "ops")["status"] == "warn"
    eig = hazard(report, "aten::linalg_eig")
    assert (eig["kind"], eig["severity"], eig["predicted"]) == ("no-mps-kernel", "warning", True)
    float64 = hazard(report, "float64")
    assert (float64["kind"], float64["dtype"], float64["predicted"]) == (
        "unsupported-dtype", "float64", True)
    assert "aten::mm" in float64["detail"]
    assert "aten::linalg_eig" in report["ops"]["without_mps_kernel"]
    assert "aten::linalg_eig [no-mps-kernel, predicted]" in out


def test_drift_from_a_saved_reference_fails_with_the_differences(
    smoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = tmp_path / "ref.safetensors"
    code, report, _, _ = smoke(target("drifting.py:predict"), "--save-reference", str(reference))
    assert code == 0
    assert report["saved_reference"] == str(reference)

    code, report, _, _ = smoke(target("drifting.py:predict"), "--reference", str(reference))
    assert code == 0
    assert check(report, "compare")["status"] == "pass"

    monkeypatch.setenv("SMOKE_DRIFT", "0.5")
    code, report, out, _ = smoke(target("drifting.py:predict"), "--reference", str(reference))
    assert code == 1
    assert report["verdict"] == "fail"
    detail = check(report, "compare")["detail"]
    assert "logits: 1 of 15 elements differ" in detail
    assert "max abs diff 0.5 at [0, 1]" in detail
    assert "scale: 3.0 here, 2.5 in the reference" in detail
    assert "labels:" in detail
    assert "FAIL     compare" in out


def test_nan_in_the_run_fails_against_a_finite_reference(
    smoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The typical MPS failure: the run checked gives NaN where the reference (saved on CUDA)
    has numbers. A tensor element and a returned float, under the loosest tolerance."""
    reference = tmp_path / "ref.safetensors"
    smoke(target("drifting.py:predict"), "--save-reference", str(reference))
    monkeypatch.setenv("SMOKE_DRIFT", "nan")
    code, report, _, _ = smoke(target("drifting.py:predict"), "--reference", str(reference),
                               "--rtol", "1e9", "--atol", "1e9")
    assert (code, report["verdict"], check(report, "compare")["status"]) == (1, "fail", "fail")
    detail = check(report, "compare")["detail"]
    assert "logits: 1 of 15 elements differ" in detail
    assert "NaN in one but not the other at 1 elements, the first at [0, 1] (nan vs " in detail
    assert "scale: nan here, 2.5 in the reference" in detail


def test_saving_skips_the_cpu_comparison_unless_asked(smoke, tmp_path: Path) -> None:
    reference = str(tmp_path / "ref.safetensors")
    _, report, _, _ = smoke(target("drifting.py:predict"), "--save-reference", reference)
    assert check(report, "compare")["detail"].startswith("saving a reference")
    code, report, _, err = smoke(target("drifting.py:predict"), "--save-reference", reference,
                                 "--reference", "cpu")
    assert check(report, "compare")["detail"].startswith("the target ran on cpu")
    # Asked for, and the CPU cannot be compared with itself: not carried out, exit 2.
    assert code == 2 and "--reference cpu was asked for and not carried out" in err


def test_looser_tolerance_accepts_the_drift(
    smoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = tmp_path / "ref.safetensors"
    smoke(target("drifting.py:predict"), "--save-reference", str(reference))
    monkeypatch.setenv("SMOKE_DRIFT", "1e-4")
    code, report, _, _ = smoke(target("drifting.py:predict"), "--reference", str(reference))
    assert code == 1
    code, report, _, _ = smoke(target("drifting.py:predict"), "--reference", str(reference),
                               "--atol", "1e-3")
    assert code == 0, check(report, "compare")["detail"]


def test_crash_is_a_failed_check_with_the_users_line(smoke) -> None:
    code, report, out, err = smoke(target("crashing.py:forward"))
    assert code == 1
    run = check(report, "run")
    assert run["status"] == "fail"
    assert "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x5 and 8x4)" in run["detail"]
    assert "crashing.py:16" in run["detail"]
    assert "`return layer(batch)`" in run["detail"]
    assert report["error"]["error_type"] == "RuntimeError"
    assert {check(report, n)["status"] for n in ("compare", "determinism", "checkpoint")} == {
        "skipped"}
    assert "Traceback" not in out + err


def test_crash_while_importing_the_target(smoke) -> None:
    code, report, _, err = smoke(target("import_crash.py:run"))
    assert code == 1
    detail = check(report, "run")["detail"]
    assert detail.startswith("importing the target failed: ModuleNotFoundError: No module named "
                             "'_demo_cuda_kernels'")
    assert "import_crash.py:6" in detail
    assert check(report, "ops")["status"] == "skipped"
    assert "Traceback" not in err


def test_output_that_cannot_be_compared(smoke) -> None:
    code, report, _, _ = smoke(target("odd_output.py:step"))
    assert code == 1
    assert check(report, "run")["detail"].startswith("output batches is a generator")
    assert check(report, "compare")["detail"] == "the output can't be compared"


def test_crash_while_saving_saves_nothing(smoke, tmp_path: Path) -> None:
    reference = tmp_path / "ref.safetensors"
    code, report, _, _ = smoke(target("crashing.py:forward"), "--save-reference", str(reference))
    assert code == 1
    assert check(report, "compare")["detail"].endswith("no reference was saved")
    assert not reference.exists()


def test_unwritable_reference_is_a_harness_error(smoke, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, _, err = smoke(target("drifting.py:predict"), "--save-reference",
                            str(blocker / "ref.safetensors"))
    assert code == 2
    assert err.startswith("cudalint smoke: error: cannot write the reference")
    assert err.count("\n") == 1


def test_harness_fault_is_one_line(smoke, monkeypatch: pytest.MonkeyPatch) -> None:
    from cudalint.runtime.smoke import pipeline

    def broken(*args: object) -> None:
        raise KeyError("oops")

    monkeypatch.setattr(pipeline, "run_smoke", broken)
    code, _, _, err = smoke(target("drifting.py:predict"))
    assert code == 2
    assert err == ("cudalint smoke: internal error: KeyError: 'oops' (set CUDALINT_DEBUG=1 for "
                   "the traceback)\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([target("healthy.py:nope")], "has no function 'nope'"),
        ([target("missing.py:train")], "no such file"),
        ([target("healthy.py")], "TARGET must be"),
        (["no_such_package_xyz.module:fn"], "no module named 'no_such_package_xyz'"),
        ([target("healthy.py:TinyNet.forward")], "must take a torch.device"),
        ([target("healthy.py:train_step"), "--reference", "nowhere.safetensors"],
         "no such reference file"),
    ],
)
def test_harness_errors_exit_2_with_one_line(smoke, argv: list[str], message: str) -> None:
    code, report, _, err = smoke(*argv)
    assert code == 2
    assert report is None
    assert err.count("\n") == 1
    assert err.startswith("cudalint smoke: error: ")
    assert message in err


def test_reference_of_another_target_is_refused(smoke, tmp_path: Path) -> None:
    reference = tmp_path / "ref.safetensors"
    assert smoke(target("drifting.py:predict"), "--save-reference", str(reference))[0] == 0
    code, _, _, err = smoke(target("spectral.py:spectrum"), "--reference", str(reference))
    assert code == 2
    assert "drifting.py:predict" in err
    assert "not of" in err


def test_a_file_that_is_not_a_reference_is_refused(smoke, tmp_path: Path) -> None:
    bogus = tmp_path / "ref.safetensors"
    bogus.write_bytes(b"\x00" * 64)
    code, _, _, err = smoke(target("drifting.py:predict"), "--reference", str(bogus))
    assert code == 2
    assert "cannot read reference" in err


def test_module_target_is_imported_from_the_working_directory(
    smoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(target("x")).parent)
    code, report, _, _ = smoke("drifting:predict")
    assert code == 0
    assert report["target"] == "drifting:predict"


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([target("healthy.py:train_step"), "--device", "tpu"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_json_to_stdout_replaces_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([target("drifting.py:predict"), "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "pass"


def test_as_a_subprocess(tmp_path: Path) -> None:
    """`python -m cudalint.runtime.smoke`, with PYTORCH_ENABLE_MPS_FALLBACK set by the target's
    module before its own `import torch`, as scripts do."""
    module = tmp_path / "sets_fallback.py"
    module.write_text(
        "import os\nos.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'\nimport torch\n\n"
        "def step(device):\n    return torch.ones(2, device=device).sum()\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "cudalint.runtime.smoke", f"{module}:step", "--json", "-"],
        capture_output=True, text=True, env=subprocess_env(), check=False, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    fallback = report["environment"]["PYTORCH_ENABLE_MPS_FALLBACK"]
    assert fallback == {"value_torch_saw": "1", "value_now": "1",
                        "torch_imported_before_smoke": False, "enabled": True,
                        "set_too_late": False}


def test_without_torch_one_line_and_exit_2(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['torch'] = None\n"
            "from cudalint.runtime.smoke.command import main\n"
            "raise SystemExit(main(['x.py:f']))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=subprocess_env(), check=False, timeout=60)
    assert result.returncode == 2
    assert result.stderr == TORCH_MISSING + "\n"
    assert result.stdout == ""


# An output smoke cannot compare is the target's problem: a failed run, exit 1, one clear line,
# never an internal error of the harness (exit 2) (issue 31, item 16).
UNCOMPARABLE = {
    "holds_itself": "output self is a dict that holds itself (a reference cycle)",
    "nested_deeply": "output value is nested too deeply to compare",
    "unprintable_key": "output value could not be read: RuntimeError: this key cannot be "
                       "printed",
}


@pytest.mark.parametrize(("function", "detail"), list(UNCOMPARABLE.items()),
                         ids=list(UNCOMPARABLE))
def test_an_output_that_cannot_be_compared_fails_the_run(smoke, function: str,
                                                         detail: str) -> None:
    code, report, _, err = smoke(target(f"odd_output.py:{function}"))
    assert code == 1, err
    assert check(report, "run")["detail"].startswith(detail)
    assert check(report, "compare")["detail"] == "the output can't be compared"
    assert "internal error" not in err


def test_a_self_referencing_output_fails_the_isolated_run_too(capsys) -> None:
    code = main([target("odd_output.py:holds_itself")])
    out, err = capsys.readouterr()
    assert code == 1
    assert "FAIL     run          output self is a dict that holds itself" in out
    assert "internal error" not in err and "verdict: fail" in out


def test_the_same_tensor_twice_is_no_cycle(smoke) -> None:
    code, report, _, _ = smoke(target("odd_output.py:shares_a_tensor"))
    assert code == 0
    assert check(report, "run")["status"] == "pass"

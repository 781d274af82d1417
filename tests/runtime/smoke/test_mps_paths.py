"""The MPS side, off a Mac: torch's messages, hazards of an MPS run, device choice, Rosetta and
PYTORCH_ENABLE_MPS_FALLBACK. Nothing here runs on MPS; availability is patched."""

from __future__ import annotations

import subprocess
from collections import Counter
from typing import Any

import pytest
import torch

from cudalint.mps_ops import load_coverage
from cudalint.runtime.smoke import environment
from cudalint.runtime.smoke.audit import OpLog
from cudalint.runtime.smoke.devices import resolve_device
from cudalint.runtime.smoke.errors import HarnessError
from cudalint.runtime.smoke.hazards import HazardContext, build_hazards
from cudalint.runtime.smoke.mps_messages import MpsMessage, op_name, parse_mps_message
from cudalint.runtime.smoke.report import HazardKind, Severity

from .helpers import check, hazard, target

# --- torch's messages on a Mac --------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The operator 'aten::linalg_eig' is not currently supported on the MPS backend and will "
         "fall back to run on the CPU. This may have performance implications.",
         MpsMessage(HazardKind.CPU_FALLBACK, op="aten::linalg_eig")),
        ("The operator 'aten::_linalg_eigh.eigenvalues' is not currently implemented for the MPS "
         "device. If you want this op to be considered for addition please comment on "
         "https://github.com/pytorch/pytorch/issues/141287 ...",
         MpsMessage(HazardKind.NO_MPS_KERNEL, op="aten::_linalg_eigh")),
        ("Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support "
         "float64. Please use float32 instead.",
         MpsMessage(HazardKind.DTYPE, dtype="float64")),
        ("Trying to convert ComplexDouble to the MPS backend but it does not have support for "
         "that dtype.", MpsMessage(HazardKind.DTYPE, dtype="complex128")),
        ("Trying to convert Float8_e4m3fn to the MPS backend but it does not have support for "
         "that dtype.", MpsMessage(HazardKind.DTYPE, dtype="float8_e4m3fn")),
        ("'pin_memory' argument is set as true but not supported on MPS now, device pinned "
         "memory won't be used.", MpsMessage(HazardKind.PIN_MEMORY)),
        ("CUDA is not available. Disabling autocast.", None),
    ],
)
def test_messages_are_recognised(text: str, expected: MpsMessage | None) -> None:
    assert parse_mps_message(text) == expected


@pytest.mark.parametrize("text", ["aten::mode", "aten::mode.values", "aten.mode.default", "mode"])
def test_op_names_are_normalised(text: str) -> None:
    assert op_name(text) == "aten::mode"


def test_warnings_from_the_run_become_hazards(smoke) -> None:
    code, report, _, _ = smoke(target("warns_on_mps.py:step"))
    assert code == 0, "on CPU a fallback seen in a message is still only a warning"
    fallback = hazard(report, "aten::linalg_eig")
    assert (fallback["kind"], fallback["predicted"]) == ("cpu-fallback", False)
    assert hazard(report, "pin-memory")["severity"] == "warning"
    assert report["ops"]["fallbacks"] == ["aten::linalg_eig"]
    assert any("will fall back to run on the CPU" in text for text in report["warnings"])


def test_mps_errors_in_a_crash_become_hazards(smoke) -> None:
    code, report, _, _ = smoke(target("float64_on_mps.py:step"))
    assert code == 1
    float64 = hazard(report, "float64")
    assert (float64["kind"], float64["severity"]) == ("unsupported-dtype", "error")
    assert check(report, "ops")["status"] == "fail"


# --- hazards of a run on MPS ----------------------------------------------------------------

def _mps_log(*ops: str) -> OpLog:
    log = OpLog()
    for op in ops:
        log.counts[op] += 1
        log.overloads.setdefault(op, set()).add(op.replace("::", ".") + ".default")
        log.devices.setdefault(op, set()).add("mps")
    return log


def _subjects(hazards: list[Any]) -> dict[str, tuple[str, str, bool]]:
    return {h.subject: (h.kind.value, h.severity.value, h.predicted) for h in hazards}


@pytest.fixture(scope="module")
def coverage() -> Any:
    return load_coverage("2.13.0")


def test_op_without_kernel_that_ran_on_mps_fell_back(coverage: Any) -> None:
    log = _mps_log("aten::mm", "aten::linalg_eig", "aten::linalg_svd")
    hazards = build_hazards(log, [], HazardContext("mps", False, coverage))
    assert _subjects(hazards) == {
        "aten::linalg_eig": ("cpu-fallback", "error", False),
        "aten::linalg_svd": ("cpu-fallback", "error", False),
    }
    allowed = build_hazards(log, [], HazardContext("mps", True, coverage))
    assert {h.severity for h in allowed} == {Severity.WARNING}


def test_op_without_kernel_that_raised_on_mps(coverage: Any) -> None:
    log = _mps_log("aten::mode")
    log.raised.append("aten::mode")
    hazards = build_hazards(log, [], HazardContext("mps", True, coverage))
    assert _subjects(hazards) == {"aten::mode": ("no-mps-kernel", "error", False)}


def test_fallback_warning_on_mps_fails_unless_allowed(coverage: Any) -> None:
    message = MpsMessage(HazardKind.CPU_FALLBACK, op="aten::linalg_eig")
    log = _mps_log("aten::linalg_eig")
    (strict,) = build_hazards(log, [message, message], HazardContext("mps", False, coverage))
    assert (strict.severity, strict.count, strict.predicted) == (Severity.ERROR, 2, False)
    (lenient,) = build_hazards(log, [message], HazardContext("mps", True, coverage))
    assert lenient.severity is Severity.WARNING


def test_same_ops_on_cpu_are_predictions(coverage: Any) -> None:
    log = _mps_log("aten::linalg_eig", "aten::linalg_svd")
    log.devices = {op: {"cpu"} for op in log.devices}
    hazards = build_hazards(log, [], HazardContext("cpu", False, coverage))
    assert _subjects(hazards) == {
        "aten::linalg_eig": ("no-mps-kernel", "warning", True),
        "aten::linalg_svd": ("cpu-fallback", "warning", True),
    }


def test_mixed_device_and_cpu_ops_on_mps(coverage: Any) -> None:
    log = _mps_log("aten::add")
    log.mixed["aten::add"] = {"cpu+mps"}
    log.cpu_ops = Counter({"aten::stack": 3})
    hazards = build_hazards(log, [], HazardContext("mps", False, coverage))
    assert _subjects(hazards) == {
        "aten::add": ("mixed-device", "error", False),
        "cpu-op": ("cpu-op", "warning", False),
    }
    allowed = build_hazards(log, [], HazardContext("mps", True, coverage))
    assert {h.severity for h in allowed} == {Severity.WARNING}


def test_without_a_coverage_table_messages_still_count() -> None:
    message = MpsMessage(HazardKind.NO_MPS_KERNEL, op="aten::mode")
    hazards = build_hazards(_mps_log("aten::mode"), [message], HazardContext("mps", False, None))
    assert _subjects(hazards) == {"aten::mode": ("no-mps-kernel", "error", False)}


def test_op_log_devices_and_dtypes() -> None:
    log = OpLog()
    meta = torch.empty(2, device="meta")
    log.note("aten::add", "aten.add.Tensor", [torch.ones(2), meta], [meta], "meta")
    log.note("aten::mul", "aten.mul.Tensor", [meta, torch.tensor(2.0)], [meta], "meta")
    log.note("aten::stack", "aten.stack.default", [torch.ones(2)], [torch.ones(1, 2)], "meta")
    log.note("aten::_to_copy", "aten._to_copy.default", [torch.ones(1, dtype=torch.float64)],
             [torch.empty(1, device="meta")], "meta")
    assert log.mixed == {"aten::add": {"cpu+meta"}}  # a 0-dim CPU tensor is a scalar
    assert log.cpu_ops == Counter({"aten::stack": 1})
    assert log.dtype_ops == {}  # float64 on CPU being converted on its way is fine

    log.note("aten::mm", "aten.mm.default", [torch.empty(2, 2, dtype=torch.float64,
                                                         device="meta")], [], "meta")
    assert log.dtype_ops == {"float64": Counter({"aten::mm": 1})}


def test_host_setup_is_not_a_forgotten_transfer() -> None:
    log = OpLog()
    weight = torch.empty(4, 2)
    log.note("aten::empty", "aten.empty.memory_format", [], [weight], "meta")
    log.note("aten::uniform_", "aten.uniform_.default", [weight], [weight], "meta")
    step = torch.tensor(1.0)
    log.note("aten::add_", "aten.add_.Tensor", [step], [step], "meta")  # an optimizer's step
    assert log.cpu_ops == Counter()
    log.note("aten::mm", "aten.mm.default", [weight, weight.T], [torch.empty(4, 4)], "meta")
    assert log.cpu_ops == Counter({"aten::mm": 1})


def test_random_draws_on_the_device_are_noted() -> None:
    log = OpLog()
    log.note("aten::randn", "aten.randn.default", [], [torch.empty(3)], "meta")
    log.note("aten::randn", "aten.randn.default", [], [torch.empty(3, device="meta")], "meta")
    log.note("aten::native_dropout", "aten.native_dropout.default",
             [torch.empty(3, device="meta")], [torch.empty(3, device="meta")], "meta")
    assert log.device_random == Counter({"aten::randn": 1, "aten::native_dropout": 1})
    log.note("aten::randn", "aten.randn.default", [], [torch.empty(3)], "cpu")
    assert log.device_random["aten::randn"] == 1  # a CPU run has no device stream


# --- device choice ----------------------------------------------------------------------------

@pytest.fixture
def mps_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: True)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)


def test_auto_is_mps_on_a_mac(mps_here: None) -> None:
    assert resolve_device("auto") == torch.device("mps")
    assert resolve_device("mps") == torch.device("mps")


def test_auto_never_picks_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cuda") == torch.device("cuda")


def test_auto_follows_the_override(monkeypatch: pytest.MonkeyPatch, mps_here: None) -> None:
    monkeypatch.setenv("CUDALINT_DEVICE", "cpu")
    assert resolve_device("auto") == torch.device("cpu")
    monkeypatch.setenv("CUDALINT_DEVICE", "tpu")
    with pytest.raises(HarnessError, match="CUDALINT_DEVICE='tpu'"):
        resolve_device("auto")


def test_unavailable_devices_are_harness_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(HarnessError, match="--device mps: MPS exists only on macOS"):
        resolve_device("mps")
    with pytest.raises(HarnessError, match="--device cuda: CUDA is not available"):
        resolve_device("cuda")


# --- Rosetta, macOS and the fallback variable ----------------------------------------------

@pytest.fixture
def on_mac(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A Mac whose `sysctl -n sysctl.proc_translated` prints `answer["stdout"]`."""
    answer: dict[str, Any] = {"stdout": "0\n", "returncode": 0, "calls": []}

    def run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        answer["calls"].append(args)
        return subprocess.CompletedProcess(args, answer["returncode"], answer["stdout"], "")

    monkeypatch.setattr(environment.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(environment.platform, "mac_ver", lambda: ("15.1", ("", "", ""), "arm64"))
    monkeypatch.setattr(environment.subprocess, "run", run)
    return answer


def test_rosetta_is_detected(on_mac: dict[str, Any]) -> None:
    on_mac["stdout"] = "1\n"
    assert environment.rosetta_translated() is True
    assert on_mac["calls"] == [["sysctl", "-n", "sysctl.proc_translated"]]
    reason = environment.mps_unavailable_reason()
    assert reason is not None and "Rosetta 2" in reason


def test_native_and_intel_macs_are_not_translated(on_mac: dict[str, Any]) -> None:
    assert environment.rosetta_translated() is False
    on_mac.update(stdout="", returncode=1)  # Intel Macs lack the key
    assert environment.rosetta_translated() is False


def test_sysctl_is_not_asked_off_macos(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment.platform, "system", lambda: "Linux")
    monkeypatch.setattr(environment.subprocess, "run", None)
    assert environment.rosetta_translated() is False


def test_old_macos_is_named(on_mac: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment.platform, "mac_ver", lambda: ("13.6.1", ("", "", ""), "arm64"))
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: True)
    reason = environment.mps_unavailable_reason()
    assert reason is not None and "needs macOS 14 or later" in reason and "13.6.1" in reason


def test_environment_check_warns_under_rosetta(on_mac: dict[str, Any]) -> None:
    on_mac["stdout"] = "1\n"
    watch = environment.TorchImportWatch(already_imported=True, at_start=None)
    env = environment.collect(torch.device("cpu"), watch)
    assert env["rosetta"] is True
    result = environment.environment_check(env)
    assert result.status.value == "warn"
    assert "install an arm64 Python" in result.detail


def test_watch_records_the_value_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTORCH_ENABLE_MPS_FALLBACK", "1")
    watch = environment.TorchImportWatch(already_imported=False, at_start=None)
    spy = environment._TorchImportSpy(watch)
    assert spy.find_spec("numpy", None) is None
    assert not watch.seen_import
    assert spy.find_spec("torch", None) is None
    monkeypatch.setenv("PYTORCH_ENABLE_MPS_FALLBACK", "0")
    assert spy.find_spec("torch", None) is None  # only the first import counts
    described = watch.describe()
    assert described["value_torch_saw"] == "1"
    assert described["enabled"] is True
    assert described["set_too_late"] is True
    env = {"python": "3", "os": "Darwin", "os_release": "15", "machine": "arm64",
           "torch": "2.13.0", "cuda_available": False, "mps_built": True, "mps_available": True,
           "rosetta": False, "PYTORCH_ENABLE_MPS_FALLBACK": described}
    result = environment.environment_check(env)
    assert result.status.value == "warn"
    assert "changed to '0' after torch was imported" in result.detail


def test_watch_when_torch_was_already_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTORCH_ENABLE_MPS_FALLBACK", "1")
    watch = environment.TorchImportWatch.start()
    watch.stop()
    assert watch.already_imported
    assert watch.describe()["value_torch_saw"] == "1"
    assert watch.describe()["set_too_late"] is False


@pytest.mark.parametrize(("value", "enabled"), [("1", True), ("0", False), (None, False),
                                                 ("yes", False), ("2", True)])
def test_fallback_enabled_as_torch_reads_it(value: str | None, enabled: bool) -> None:
    assert environment.fallback_enabled(value) is enabled


def test_backend_specific_ops_are_not_predicted(coverage: Any) -> None:
    log = _mps_log("aten::_scaled_dot_product_flash_attention_for_cpu", "aten::mkldnn_rnn_layer",
                   "aten::mode")
    log.devices = {op: {"cpu"} for op in log.devices}
    hazards = build_hazards(log, [], HazardContext("cpu", False, coverage))
    assert _subjects(hazards) == {"aten::mode": ("no-mps-kernel", "warning", True)}

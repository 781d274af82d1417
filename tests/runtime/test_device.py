"""The portable device helper: the CPU path for real, CUDA and MPS through recording fakes."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from cudalint import device as dev
from cudalint.runtime.helper import HelperExistsError, helper_source, write_helper

REAL_CUDA = torch.cuda.is_available()
TORCH_IS_AVAILABLE = torch.cuda.is_available  # torch's own, before any test patches it


@pytest.fixture(autouse=True)
def no_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU path, also on a machine with a GPU; the fixtures below add a backend back."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(torch.accelerator, "current_accelerator",
                        lambda check_available=False: None)


class Recorder:
    """Fake backend functions that note each call and return a fixed value."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def fake(self, name: str, result: Any = None) -> Callable[..., Any]:
        def function(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            return result

        return function


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def on_cuda(monkeypatch: pytest.MonkeyPatch, recorder: Recorder) -> Recorder:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for name, result in _CUDA_FAKES.items():
        monkeypatch.setattr(torch.cuda, name, recorder.fake(f"cuda.{name}", result))
    _forbid(monkeypatch, torch.mps, _MPS_FAKES)
    return recorder


@pytest.fixture
def on_mps(monkeypatch: pytest.MonkeyPatch, recorder: Recorder) -> Recorder:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: True)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    for name, result in _MPS_FAKES.items():
        monkeypatch.setattr(torch.mps, name, recorder.fake(f"mps.{name}", result))
    monkeypatch.setattr(torch.mps.event, "Event", recorder.fake("mps.Event", "mps-event"))
    monkeypatch.setattr(
        torch.accelerator.memory, "max_memory_allocated", recorder.fake("acc.max_alloc", 700)
    )
    monkeypatch.setattr(
        torch.accelerator.memory, "max_memory_reserved", recorder.fake("acc.max_reserved", 10)
    )
    monkeypatch.setattr(
        torch.accelerator.memory, "reset_peak_memory_stats", recorder.fake("acc.reset_peak")
    )
    _forbid(monkeypatch, torch.cuda, _CUDA_FAKES)
    return recorder


_CUDA_FAKES: dict[str, Any] = {
    "synchronize": None, "empty_cache": None, "manual_seed": None, "manual_seed_all": None,
    "memory_allocated": 11, "max_memory_allocated": 12, "memory_reserved": 13,
    "max_memory_reserved": 14, "reset_peak_memory_stats": None, "device_count": 4,
    "set_device": None, "current_device": 3, "get_device_name": "NVIDIA H200",
    "Event": "cuda-event", "get_rng_state": "cuda-state", "set_rng_state": None,
}
_MPS_FAKES: dict[str, Any] = {
    "synchronize": None, "empty_cache": None, "manual_seed": None,
    "current_allocated_memory": 500, "driver_allocated_memory": 900,
    "get_rng_state": "mps-state", "set_rng_state": None,
}


def _forbid(monkeypatch: pytest.MonkeyPatch, module: Any, names: dict[str, Any]) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"{module.__name__} must not be called here")

    for name in names:
        monkeypatch.setattr(module, name, boom)


# --- pick_device ----------------------------------------------------------------------------

def test_cpu_without_an_accelerator() -> None:
    assert dev.pick_device() == torch.device("cpu")


def test_cpu_drops_the_index() -> None:
    picked = dev.pick_device(3)
    assert picked == torch.device("cpu")
    assert picked.index is None


def test_cuda_first(on_cuda: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    # CUDA wins even where another backend also claims to be available.
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: True)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert dev.pick_device() == torch.device("cuda")
    assert dev.pick_device().index is None


@pytest.mark.parametrize("index", [1, "1"])
def test_cuda_with_index(on_cuda: Recorder, index: int | str) -> None:
    assert dev.pick_device(index) == torch.device("cuda", 1)


def test_cuda_bad_index(on_cuda: Recorder) -> None:
    with pytest.raises(ValueError, match="string of digits"):
        dev.pick_device("one")


@pytest.mark.parametrize("index", [-1, -2])
def test_negative_index_is_refused_by_the_helper(on_cuda: Recorder, index: int) -> None:
    """The helper's own message, not torch's error for `torch.device("cuda", -1)`."""
    with pytest.raises(ValueError, match="must not be negative"):
        dev.pick_device(index)


def test_mps_drops_the_index(on_mps: Recorder) -> None:
    picked = dev.pick_device("2")
    assert picked == torch.device("mps")
    assert picked.index is None


def test_mps_needs_a_build_with_mps(on_mps: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: False)
    assert dev.pick_device() == torch.device("cpu")


def test_xpu_through_torch_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []

    def current_accelerator(check_available: bool = False) -> torch.device:
        seen.append(check_available)
        return torch.device("xpu")

    monkeypatch.setattr(torch.accelerator, "current_accelerator", current_accelerator)
    assert dev.pick_device(1) == torch.device("xpu")
    assert seen == [True]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("cpu", "cpu"), ("mps", "mps"), ("cuda:1", "cuda:1"), (" CUDA ", "cuda"), ("cpu:0", "cpu")],
)
def test_env_override(monkeypatch: pytest.MonkeyPatch, value: str, expected: str) -> None:
    monkeypatch.setenv("CUDALINT_DEVICE", value)
    assert dev.pick_device() == torch.device(expected)


def test_env_override_beats_cuda(on_cuda: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDALINT_DEVICE", "cpu")
    assert dev.pick_device(1) == torch.device("cpu")


def test_env_override_cuda_takes_the_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDALINT_DEVICE", "cuda")
    assert dev.pick_device("2") == torch.device("cuda", 2)
    monkeypatch.setenv("CUDALINT_DEVICE", "cuda:0")
    assert dev.pick_device(2) == torch.device("cuda", 0)


def test_empty_env_override_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDALINT_DEVICE", "")
    assert dev.pick_device() == torch.device("cpu")


def test_bad_env_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDALINT_DEVICE", "gpu0")
    with pytest.raises(ValueError, match=r"CUDALINT_DEVICE='gpu0' is not a torch device"):
        dev.pick_device()


# --- the torch.cuda replacements ------------------------------------------------------------

def _exercise() -> list[Any]:
    """Every replacement once, with the arguments a rewritten program would pass."""
    return [
        dev.synchronize(), dev.synchronize(1), dev.empty_cache(), dev.manual_seed(7),
        dev.manual_seed_all(8), dev.memory_allocated(), dev.max_memory_allocated(0),
        dev.memory_reserved(), dev.max_memory_reserved(), dev.reset_peak_memory_stats(),
        dev.device_count(), dev.set_device(2), dev.current_device(), dev.get_device_name(0),
        dev.Event(enable_timing=True), dev.get_rng_state(), dev.set_rng_state("state"),
    ]


def test_cuda_calls_torch_cuda_with_the_same_arguments(on_cuda: Recorder) -> None:
    results = _exercise()
    assert on_cuda.calls == [
        ("cuda.synchronize", (None,), {}), ("cuda.synchronize", (1,), {}),
        ("cuda.empty_cache", (), {}), ("cuda.manual_seed", (7,), {}),
        ("cuda.manual_seed_all", (8,), {}), ("cuda.memory_allocated", (None,), {}),
        ("cuda.max_memory_allocated", (0,), {}), ("cuda.memory_reserved", (None,), {}),
        ("cuda.max_memory_reserved", (None,), {}), ("cuda.reset_peak_memory_stats", (None,), {}),
        ("cuda.device_count", (), {}), ("cuda.set_device", (2,), {}),
        ("cuda.current_device", (), {}), ("cuda.get_device_name", (0,), {}),
        ("cuda.Event", (), {"enable_timing": True, "blocking": False, "interprocess": False}),
        ("cuda.get_rng_state", (), {}), ("cuda.set_rng_state", ("state",), {}),
    ]
    assert results[5:8] == [11, 12, 13]
    assert results[10] == 4
    assert results[12:16] == [3, "NVIDIA H200", "cuda-event", "cuda-state"]


def test_mps_calls_torch_mps(on_mps: Recorder) -> None:
    results = _exercise()
    assert [name for name, _, _ in on_mps.calls] == [
        "mps.synchronize", "mps.synchronize", "mps.empty_cache", "mps.manual_seed",
        "mps.manual_seed", "mps.current_allocated_memory", "mps.current_allocated_memory",
        "acc.max_alloc", "mps.driver_allocated_memory", "mps.driver_allocated_memory",
        "acc.max_reserved", "acc.reset_peak", "mps.Event", "mps.get_rng_state",
        "mps.set_rng_state",
    ]
    assert on_mps.calls[3][1] == (7,)
    assert on_mps.calls[4][1] == (8,)
    assert on_mps.calls[12][2] == {"enable_timing": True}
    # Peaks never fall below the current value, even where the accelerator reports less.
    assert results[5:9] == [500, 700, 900, 900]
    assert results[10] == 1
    assert results[12] == 0


def test_mps_peak_without_torch_accelerator_memory(
    on_mps: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(torch.accelerator, "memory")
    assert dev.max_memory_allocated() == 500
    assert dev.max_memory_reserved() == 900
    dev.reset_peak_memory_stats()


def test_mps_peak_when_the_accelerator_raises(
    on_mps: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported() -> int:
        raise RuntimeError("not supported on mps")

    monkeypatch.setattr(torch.accelerator.memory, "max_memory_allocated", unsupported)
    assert dev.max_memory_allocated() == 500


def test_mps_device_name_asks_sysctl(on_mps: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    dev._mac_chip_name.cache_clear()
    seen: list[list[str]] = []

    def run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        seen.append(args)
        return subprocess.CompletedProcess(args, 0, stdout="Apple M2 Pro\n", stderr="")

    monkeypatch.setattr(subprocess, "run", run)
    assert dev.get_device_name() == "Apple M2 Pro"
    assert seen == [["sysctl", "-n", "machdep.cpu.brand_string"]]
    dev._mac_chip_name.cache_clear()


def test_cpu_is_quiet_and_zero() -> None:
    results = _exercise()
    assert results[5:8] == [0, 0, 0]
    assert results[10] == 0
    assert results[12] == 0
    assert isinstance(results[13], str)
    assert isinstance(results[14], dev.CpuEvent)
    assert results[15].numel() == 0


def test_env_override_gives_cpu_behaviour_on_cuda(
    on_cuda: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDALINT_DEVICE", "cpu")
    _exercise()
    assert on_cuda.calls == []


def test_cpu_event_times_in_milliseconds() -> None:
    start, end = dev.Event(enable_timing=True), dev.Event(enable_timing=True)
    start.record()
    time.sleep(0.02)
    end.record()
    end.synchronize()
    assert end.query()
    assert 15.0 <= start.elapsed_time(end) < 2000.0


def test_cpu_event_refuses_like_cuda() -> None:
    untimed = dev.Event()
    timed = dev.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        untimed.elapsed_time(timed)
    with pytest.raises(RuntimeError, match="must be recorded"):
        timed.elapsed_time(dev.Event(enable_timing=True))


# --- choosing a device initialises nothing ---------------------------------------------------
# torch 2.13's own is_available() on an emulated CUDA build: NVML counts two GPUs, and asking
# the CUDA runtime (cudaGetDeviceCount, which runs cuInit) is recorded.

@pytest.fixture
def cuda_build(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    runtime: list[str] = []

    def get_device_count() -> int:
        runtime.append("cudaGetDeviceCount")
        return 2

    monkeypatch.setattr(torch.cuda, "is_available", TORCH_IS_AVAILABLE)
    monkeypatch.setattr(torch.cuda, "_is_compiled", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: 2)
    monkeypatch.setattr(torch._C, "_cuda_getDeviceCount", get_device_count, raising=False)
    monkeypatch.delenv("PYTORCH_NVML_BASED_CUDA_CHECK", raising=False)
    return runtime


def test_choosing_cuda_asks_nvml_not_the_cuda_runtime(cuda_build: list[str]) -> None:
    assert TORCH_IS_AVAILABLE() and cuda_build == ["cudaGetDeviceCount"]  # torch's default
    cuda_build.clear()
    assert dev.pick_device() == torch.device("cuda")
    assert dev.pick_device("cuda:1") == torch.device("cuda", 1)
    assert cuda_build == [], "choosing the device initialised CUDA"
    assert "PYTORCH_NVML_BASED_CUDA_CHECK" not in os.environ


def test_no_gpu_seen_by_nvml_is_no_cuda(cuda_build: list[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: 0)
    assert dev.pick_device() == torch.device("cpu")
    assert cuda_build == []


@pytest.mark.parametrize("setting", ["0", "1"])
def test_a_user_nvml_setting_is_kept(cuda_build: list[str], monkeypatch: pytest.MonkeyPatch,
                                     setting: str) -> None:
    monkeypatch.setenv("PYTORCH_NVML_BASED_CUDA_CHECK", setting)
    assert dev.pick_device() == torch.device("cuda")
    assert cuda_build == ([] if setting == "1" else ["cudaGetDeviceCount"])
    assert os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] == setting


def test_once_cuda_is_initialised_torch_answers_as_usual(
        cuda_build: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    assert dev.pick_device() == torch.device("cuda")
    assert cuda_build == ["cudaGetDeviceCount"]


# --- standalone, and copied verbatim ---------------------------------------------------------

def test_importing_the_helper_does_not_import_torch() -> None:
    code = "import sys, cudalint.device; assert 'torch' not in sys.modules, 'torch imported'"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), check=False
    )
    assert result.returncode == 0, result.stderr


def test_helper_imports_only_the_stdlib_and_torch() -> None:
    tree = ast.parse(helper_source())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    }
    assert imported <= {"__future__", "functools", "os", "platform", "subprocess", "time",
                        "typing", "torch"}


def test_helper_source_is_device_py() -> None:
    assert helper_source() == Path(dev.__file__).read_text(encoding="utf-8")


def test_write_helper_and_use_the_copy(tmp_path: Path) -> None:
    target = tmp_path / "src" / "pkg" / "portable.py"
    write_helper(target, force=False)
    assert target.read_text(encoding="utf-8") == helper_source()
    code = "import portable; print(portable.pick_device(0))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False,
        cwd=target.parent, env=_env(with_src=False),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ("cuda:0" if REAL_CUDA else "cpu")


def test_write_helper_refuses_to_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "device.py"
    target.write_text("mine", encoding="utf-8")
    with pytest.raises(HelperExistsError, match="--force"):
        write_helper(target, force=False)
    assert target.read_text(encoding="utf-8") == "mine"
    write_helper(target, force=True)
    assert target.read_text(encoding="utf-8") == helper_source()


def _env(*, with_src: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CUDALINT_DEVICE", "PYTHONPATH")}
    if with_src:
        env["PYTHONPATH"] = str(Path(dev.__file__).resolve().parent.parent)
    return env

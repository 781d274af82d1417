"""Portable device selection and `torch.cuda.*` replacements (written by cudalint).

`pick_device()` returns CUDA wherever CUDA is available, so a program that uses it behaves on
the CUDA server exactly as before; on a Mac it returns MPS, elsewhere XPU or CPU. The functions
below stand in for `torch.cuda.*`: on CUDA each makes exactly the `torch.cuda` call with the same
arguments, on a Mac the `torch.mps` one, and on CPU it does nothing or returns 0.

Set CUDALINT_DEVICE (`cpu`, `mps`, `cuda`, `cuda:1`, ...) to override the choice; the functions
follow the override, so `CUDALINT_DEVICE=cpu` on a CUDA machine gives CPU behaviour throughout.

This file needs only the standard library and torch, and imports torch when first used, so it
can be copied into any project.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = [
    "ENV_VAR",
    "Event",
    "current_device",
    "device_count",
    "empty_cache",
    "get_device_name",
    "get_rng_state",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "pick_device",
    "reset_peak_memory_stats",
    "set_device",
    "set_rng_state",
    "synchronize",
]

ENV_VAR = "CUDALINT_DEVICE"
_NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"


def pick_device(device: int | str | torch.device | None = None) -> torch.device:
    """The device to run on: $CUDALINT_DEVICE, else CUDA, MPS, XPU (or another accelerator), CPU.

    `device` is what the code named before: an index (`pick_device(rank)` for
    `f"cuda:{rank}"`, an int or a string of digits), a device string (`"cuda:1"`, `"cuda"`)
    or a `torch.device`. Where CUDA is available a CUDA device is returned exactly as named
    (`pick_device("cuda:1")` is `torch.device("cuda:1")`), so the code behaves as before on the
    CUDA server. Elsewhere the best device is returned, without an index, since
    `torch.device("cpu:0")` is refused by `torch.load(map_location=...)` and a Mac has one GPU.
    A device that is not CUDA (`"cpu"`, `"mps"`) is returned as it is.
    """
    import torch

    named = _named_device(device)
    if named is not None and named.type != "cuda":
        return named
    index = None if named is None else named.index
    override = _env_override(index)
    if override is not None:
        return override
    kind = _auto_device_type(include_cuda=True)
    if kind == "cuda" and index is not None:
        return torch.device("cuda", index)
    return torch.device(kind)


_ACCEPTED = "use an int, a string of digits, a device string such as 'cuda:1' or a torch.device"


def _named_device(device: int | str | torch.device | None) -> torch.device | None:
    """`device` as a torch.device: an int or a string of digits is a CUDA index."""
    import torch

    if device is None:
        return None
    if isinstance(device, torch.device):
        return device
    if isinstance(device, bool):
        raise ValueError(f"not a device: {device!r} ({_ACCEPTED})")
    if isinstance(device, int) or (isinstance(device, str) and device.strip().isdigit()):
        return torch.device("cuda", _as_index(device))
    if isinstance(device, str):
        try:
            return torch.device(device.strip())
        except RuntimeError as exc:
            raise ValueError(f"not a device: {device!r} ({_ACCEPTED}): {exc}") from None
    index = getattr(device, "__index__", None)  # numpy integers
    if index is not None:
        return torch.device("cuda", _as_index(index()))
    raise ValueError(f"not a device: {device!r} ({_ACCEPTED})")


def _env_override(index: int | None) -> torch.device | None:
    import torch

    value = os.environ.get(ENV_VAR, "").strip().lower()
    if not value:
        return None
    try:
        device = torch.device(value)
    except RuntimeError as exc:
        raise ValueError(
            f"{ENV_VAR}={value!r} is not a torch device (use e.g. cpu, mps, cuda, cuda:1): {exc}"
        ) from None
    if device.type == "cpu":
        return torch.device("cpu")
    if device.type == "cuda" and device.index is None and index is not None:
        return torch.device("cuda", index)
    return device


def _as_index(index: int | str) -> int:
    try:
        value = int(index)
    except (TypeError, ValueError):
        message = f"device index must be an int or a string of digits, not {index!r}"
        raise ValueError(message) from None
    if value < 0:
        raise ValueError(f"device index must not be negative, not {index!r}")
    return value


def _auto_device_type(*, include_cuda: bool) -> str:
    """The best device type here; CUDA is tried first so that a CUDA machine keeps CUDA."""
    import torch

    if include_cuda and _cuda_available():
        return "cuda"
    if torch.backends.mps.is_built() and torch.backends.mps.is_available():
        return "mps"
    other = _other_accelerator()
    if other is not None and other != "cuda":
        return other
    return "cpu"


def _cuda_available() -> bool:
    """`torch.cuda.is_available()`, asked through NVML while CUDA is not initialised (torch's
    PYTORCH_NVML_BASED_CUDA_CHECK=1), so that choosing a device initialises nothing, like the
    `"cuda"` it replaces: a process forked afterwards can still use CUDA, and a
    CUDA_VISIBLE_DEVICES set afterwards still applies. `pick_device()` may thus run when a
    module is imported (a device constant, a default argument). Where NVML cannot answer,
    torch asks the CUDA runtime; a PYTORCH_NVML_BASED_CUDA_CHECK the user set is kept."""
    import torch

    if _NVML_CHECK in os.environ or torch.cuda.is_initialized():
        return torch.cuda.is_available()
    os.environ[_NVML_CHECK] = "1"
    try:
        return torch.cuda.is_available()
    finally:
        os.environ.pop(_NVML_CHECK, None)


def _other_accelerator() -> str | None:
    """XPU or another accelerator torch knows of, through `torch.accelerator` when it exists."""
    import torch

    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None:
        xpu = getattr(torch, "xpu", None)
        return "xpu" if xpu is not None and xpu.is_available() else None
    try:
        found = accelerator.current_accelerator(check_available=True)
    except TypeError:  # torch 2.6 has no check_available
        found = accelerator.current_accelerator() if accelerator.is_available() else None
    return None if found is None else str(found.type)


def _kind() -> str:
    return pick_device().type


def _cuda_like(kind: str, name: str) -> Any:
    """`torch.cuda.<name>` on CUDA, `torch.xpu.<name>` on XPU (the same API); None on MPS, on
    CPU and where the backend lacks the function."""
    import torch

    if kind in ("mps", "cpu"):
        return None
    return getattr(getattr(torch, kind, None), name, None)


def synchronize(device: Any = None) -> None:
    """Wait for the device's queued work. CUDA: `torch.cuda.synchronize(device)`;
    MPS: `torch.mps.synchronize()`; CPU: nothing to wait for."""
    import torch

    kind = _kind()
    if kind == "mps":
        torch.mps.synchronize()
    elif (function := _cuda_like(kind, "synchronize")) is not None:
        function(device)


def empty_cache() -> None:
    """Release cached, unused device memory. CUDA: `torch.cuda.empty_cache()`;
    MPS: `torch.mps.empty_cache()`; CPU: nothing."""
    import torch

    kind = _kind()
    if kind == "mps":
        torch.mps.empty_cache()
    elif (function := _cuda_like(kind, "empty_cache")) is not None:
        function()


def manual_seed(seed: int) -> None:
    """Seed the accelerator's generator only (never the CPU one, unlike `torch.manual_seed`).
    CUDA: `torch.cuda.manual_seed(seed)`; MPS: `torch.mps.manual_seed(seed)`; CPU: nothing."""
    import torch

    kind = _kind()
    if kind == "mps":
        torch.mps.manual_seed(seed)
    elif (function := _cuda_like(kind, "manual_seed")) is not None:
        function(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every accelerator's generator. CUDA: `torch.cuda.manual_seed_all(seed)`;
    MPS (one GPU): `torch.mps.manual_seed(seed)`; CPU: nothing."""
    import torch

    kind = _kind()
    if kind == "mps":
        torch.mps.manual_seed(seed)
    elif (function := _cuda_like(kind, "manual_seed_all")) is not None:
        function(seed)


def memory_allocated(device: Any = None) -> int:
    """Bytes held by live tensors. CUDA: `torch.cuda.memory_allocated(device)`;
    MPS: `torch.mps.current_allocated_memory()`; CPU: 0."""
    import torch

    kind = _kind()
    if kind == "mps":
        return int(torch.mps.current_allocated_memory())
    return _cuda_like_int(kind, "memory_allocated", device)


def max_memory_allocated(device: Any = None) -> int:
    """Peak bytes held by live tensors. CUDA: `torch.cuda.max_memory_allocated(device)`;
    MPS: `torch.accelerator.memory.max_memory_allocated()` (torch >= 2.9), never below the
    current `torch.mps.current_allocated_memory()`; CPU: 0."""
    import torch

    kind = _kind()
    if kind == "mps":
        current = int(torch.mps.current_allocated_memory())
        return max(current, _accelerator_memory("max_memory_allocated"))
    return _cuda_like_int(kind, "max_memory_allocated", device)


def memory_reserved(device: Any = None) -> int:
    """Bytes reserved by the allocator. CUDA: `torch.cuda.memory_reserved(device)`;
    MPS: `torch.mps.driver_allocated_memory()`; CPU: 0."""
    import torch

    kind = _kind()
    if kind == "mps":
        return int(torch.mps.driver_allocated_memory())
    return _cuda_like_int(kind, "memory_reserved", device)


def max_memory_reserved(device: Any = None) -> int:
    """Peak bytes reserved by the allocator. CUDA: `torch.cuda.max_memory_reserved(device)`;
    MPS: `torch.accelerator.memory.max_memory_reserved()` (torch >= 2.9), never below the
    current `torch.mps.driver_allocated_memory()`; CPU: 0."""
    import torch

    kind = _kind()
    if kind == "mps":
        current = int(torch.mps.driver_allocated_memory())
        return max(current, _accelerator_memory("max_memory_reserved"))
    return _cuda_like_int(kind, "max_memory_reserved", device)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Restart peak tracking. CUDA: `torch.cuda.reset_peak_memory_stats(device)`;
    MPS: `torch.accelerator.memory.reset_peak_memory_stats()` where it exists; CPU: nothing."""
    kind = _kind()
    if kind == "mps":
        _accelerator_memory("reset_peak_memory_stats")
    elif (function := _cuda_like(kind, "reset_peak_memory_stats")) is not None:
        function(device)


def _cuda_like_int(kind: str, name: str, device: Any) -> int:
    function = _cuda_like(kind, name)
    return 0 if function is None else int(function(device))


def _accelerator_memory(name: str) -> int:
    """`torch.accelerator.memory.<name>()`, or 0 where this torch lacks it or MPS does not track
    it."""
    import torch

    memory = getattr(getattr(torch, "accelerator", None), "memory", None)
    function = getattr(memory, name, None)
    if function is None:
        return 0
    try:
        result = function()
    except (RuntimeError, NotImplementedError, TypeError):
        return 0
    return int(result or 0)


def device_count() -> int:
    """Number of devices. CUDA: `torch.cuda.device_count()`; MPS: 1; CPU: 0."""
    kind = _kind()
    if kind == "mps":
        return 1
    function = _cuda_like(kind, "device_count")
    return 0 if function is None else int(function())


def set_device(device: Any) -> None:
    """Select the current device. CUDA: `torch.cuda.set_device(device)`; MPS and CPU: nothing
    (one device)."""
    function = _cuda_like(_kind(), "set_device")
    if function is not None:
        function(device)


def current_device() -> int:
    """Index of the current device. CUDA: `torch.cuda.current_device()`; MPS and CPU: 0."""
    function = _cuda_like(_kind(), "current_device")
    return 0 if function is None else int(function())


def get_device_name(device: Any = None) -> str:
    """The device's name. CUDA: `torch.cuda.get_device_name(device)`; MPS: the Apple chip
    (e.g. "Apple M2 Pro"); CPU: the processor as `platform` reports it."""
    kind = _kind()
    if kind == "mps":
        return _mac_chip_name()
    function = _cuda_like(kind, "get_device_name")
    if function is None:
        return platform.processor() or platform.machine() or "cpu"
    return str(function(device))


@functools.lru_cache(maxsize=1)
def _mac_chip_name() -> str:
    try:
        result = subprocess.run(
            ["sysctl", "-n", "machdep.cpu.brand_string"],
            capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "Apple GPU (MPS)"
    return result.stdout.strip() or "Apple GPU (MPS)"


def get_rng_state() -> torch.Tensor:
    """The accelerator generator's state. CUDA: `torch.cuda.get_rng_state()`;
    MPS: `torch.mps.get_rng_state()`; CPU: an empty uint8 tensor (there is no accelerator
    generator). States are not interchangeable between CUDA and MPS."""
    import torch

    kind = _kind()
    if kind == "mps":
        return torch.mps.get_rng_state()
    function = _cuda_like(kind, "get_rng_state")
    if function is None:
        return torch.empty(0, dtype=torch.uint8)
    return function()  # type: ignore[no-any-return]


def set_rng_state(state: torch.Tensor) -> None:
    """Restore the accelerator generator's state. CUDA: `torch.cuda.set_rng_state(state)`;
    MPS: `torch.mps.set_rng_state(state)`; CPU: nothing."""
    import torch

    kind = _kind()
    if kind == "mps":
        torch.mps.set_rng_state(state)
    elif (function := _cuda_like(kind, "set_rng_state")) is not None:
        function(state)


def Event(enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> Any:
    """A device event for timing and ordering. CUDA: `torch.cuda.Event(...)` with the same
    arguments; MPS: `torch.mps.event.Event(enable_timing=...)`; CPU: a `CpuEvent` that records
    `time.perf_counter()`, so `start.elapsed_time(end)` still gives milliseconds."""
    import torch

    kind = _kind()
    if kind == "mps":
        return torch.mps.event.Event(enable_timing=enable_timing)
    function = _cuda_like(kind, "Event")
    if function is None:
        return CpuEvent(enable_timing=enable_timing)
    return function(enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)


class CpuEvent:
    """What `Event()` returns on CPU: work is synchronous, so recording is taking the time."""

    def __init__(self, enable_timing: bool = False) -> None:
        self.enable_timing = enable_timing
        self._time: float | None = None

    def record(self, stream: Any = None) -> None:
        self._time = time.perf_counter()

    def synchronize(self) -> None:
        """Nothing to wait for on CPU."""

    def wait(self, stream: Any = None) -> None:
        """Nothing to wait for on CPU."""

    def query(self) -> bool:
        return True

    def elapsed_time(self, end_event: CpuEvent) -> float:
        """Milliseconds from this event to `end_event`; both recorded, as with CUDA events."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0

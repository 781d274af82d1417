"""Watch every ATen op a target runs (after autograd and composite decomposition): its name,
the devices of its tensors and the dtypes MPS cannot hold."""

from __future__ import annotations

import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

# Ops that move or convert tensors: they take two devices by design, and a float64 input to
# them is the cure (`.float()`), not the disease.
TRANSFER_OPS = frozenset({
    "aten::_to_copy", "aten::to", "aten::copy_", "aten::copy", "aten::_copy_from",
    "aten::_copy_from_and_resize", "aten::lift_fresh", "aten::lift_fresh_copy",
    "aten::_pin_memory", "aten::pin_memory", "aten::set_",
})
# Making and initialising tensors on the CPU before `.to(device)` is normal (nn.Linear does it),
# and so is reading a scalar back: none of these is a forgotten transfer.
HOST_SETUP_OPS = TRANSFER_OPS | frozenset({
    "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::zeros", "aten::zeros_like",
    "aten::ones", "aten::ones_like", "aten::full", "aten::full_like", "aten::arange",
    "aten::scalar_tensor", "aten::fill_", "aten::zero_", "aten::uniform_", "aten::normal_",
    "aten::randn", "aten::rand", "aten::randint", "aten::randperm", "aten::random_",
    "aten::_local_scalar_dense", "aten::detach", "aten::alias",
})
# Ops that draw from a device's generator: CPU, CUDA and MPS give different streams.
RANDOM_OPS = frozenset({
    "aten::rand", "aten::randn", "aten::randint", "aten::randperm", "aten::rand_like",
    "aten::randn_like", "aten::randint_like", "aten::normal", "aten::normal_", "aten::uniform_",
    "aten::bernoulli", "aten::bernoulli_", "aten::native_dropout", "aten::multinomial",
    "aten::random_", "aten::exponential_", "aten::poisson", "aten::cauchy_",
    "aten::log_normal_", "aten::geometric_",
})
MPS_UNSUPPORTED_DTYPES = frozenset({torch.float64, torch.complex128})
_AUTOCAST_TYPES = frozenset({"cpu", "cuda", "mps", "xpu"})


@dataclass
class OpLog:
    """What ran, keyed by op name (`aten::mm`)."""

    counts: Counter[str] = field(default_factory=Counter)
    overloads: dict[str, set[str]] = field(default_factory=dict)  # "aten.mm.default"
    devices: dict[str, set[str]] = field(default_factory=dict)
    dtype_ops: dict[str, Counter[str]] = field(default_factory=dict)  # dtype -> op counts
    cpu_ops: Counter[str] = field(default_factory=Counter)  # CPU compute, target elsewhere
    device_random: Counter[str] = field(default_factory=Counter)  # drew on the target device
    mixed: dict[str, set[str]] = field(default_factory=dict)  # op -> {"cpu+mps"}
    raised: list[str] = field(default_factory=list)
    # Where in the user's code a CPU op or a mixed-device op first ran: "model.py:35: `...`".
    frames: dict[str, str] = field(default_factory=dict)
    # Where each op, and each dtype MPS lacks, first ran: the fallback pair's "where".
    first_seen: dict[str, str] = field(default_factory=dict)
    dtype_frames: dict[str, str] = field(default_factory=dict)
    autocast: set[str] = field(default_factory=set)  # "cpu bfloat16" while autocast was on

    def note(self, name: str, overload: str, inputs: list[torch.Tensor],
             outputs: list[torch.Tensor], target: str) -> None:
        if name not in self.first_seen:
            self.first_seen[name] = user_frame() or "?"
        self.counts[name] += 1
        self.overloads.setdefault(name, set()).add(overload)
        devices = {tensor.device.type for tensor in (*inputs, *outputs)}
        self.devices.setdefault(name, set()).update(devices)
        self._note_dtypes(name, inputs, outputs, target)
        self._note_devices(name, inputs, devices, target)

    def _note_devices(self, name: str, inputs: list[torch.Tensor], devices: set[str],
                      target: str) -> None:
        if target != "cpu" and devices == {"cpu"} and name not in HOST_SETUP_OPS and any(
                tensor.dim() > 0 for tensor in inputs):
            self.cpu_ops[name] += 1
            self._note_frame(name)
        if name in RANDOM_OPS and target != "cpu" and target in devices:
            self.device_random[name] += 1
        if name not in TRANSFER_OPS:
            # A 0-dim CPU tensor is a scalar that any device accepts.
            real = {t.device.type for t in inputs if not (t.device.type == "cpu" and t.dim() == 0)}
            if len(real) > 1:
                self.mixed.setdefault(name, set()).add("+".join(sorted(real)))
                self._note_frame(name)

    def _note_frame(self, name: str) -> None:
        if name not in self.frames:
            self.frames[name] = user_frame() or "?"

    def _note_dtypes(self, name: str, inputs: list[torch.Tensor], outputs: list[torch.Tensor],
                     target: str) -> None:
        watched = outputs if name in TRANSFER_OPS else [*inputs, *outputs]
        # On CPU any tensor could end up on the Mac's GPU; elsewhere only the device's can.
        found = {str(t.dtype).removeprefix("torch.") for t in watched
                 if t.dtype in MPS_UNSUPPORTED_DTYPES
                 and (target == "cpu" or t.device.type == target)}
        for dtype in found:
            self.dtype_ops.setdefault(dtype, Counter())[name] += 1
            if dtype not in self.dtype_frames:
                self.dtype_frames[dtype] = user_frame() or "?"


def user_frame() -> str | None:
    """The innermost frame of the user's code on the current stack, as `file:line: `code``."""
    from cudalint.runtime.smoke.crash import display_path, is_library

    for frame in reversed(traceback.extract_stack()):
        if not is_library(frame.filename):
            code = f": `{frame.line}`" if frame.line else ""
            return f"{display_path(frame.filename)}:{frame.lineno}{code}"
    return None


class OpAudit(TorchDispatchMode):
    """`with OpAudit(device) as audit:` records each op into `audit.log`."""

    def __init__(self, device: torch.device) -> None:
        super().__init__()
        self.target = device.type
        self.log = OpLog()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func._schema.name
        inputs = _tensors((args, kwargs))
        try:
            result = func(*args, **kwargs)
        except Exception:
            self.log.raised.append(name)
            self.log.note(name, str(func), inputs, [], self.target)
            raise
        self.log.note(name, str(func), inputs, _tensors(result), self.target)
        return result


class AutocastWatch(TorchFunctionMode):
    """Notes the autocast modes on while torch functions run: autocast is applied above the
    dispatch level OpAudit sees, so it is watched at the torch-function level."""

    def __init__(self, device: torch.device, seen: set[str]) -> None:
        super().__init__()
        self.types = sorted({"cpu", device.type} & _AUTOCAST_TYPES)
        self.seen = seen

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        for device_type in self.types:
            if torch.is_autocast_enabled(device_type):
                dtype = str(torch.get_autocast_dtype(device_type)).removeprefix("torch.")
                self.seen.add(f"{device_type} {dtype}")
        return func(*args, **(kwargs or {}))


def _tensors(tree: Any) -> list[torch.Tensor]:
    return [leaf for leaf in tree_leaves(tree) if isinstance(leaf, torch.Tensor)]

"""The CUDA API table (data/torch_cuda_api.toml) against the helper and the installed torch."""

from __future__ import annotations

import ctypes.util
import inspect
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

from cudalint import device
from cudalint.engine.walk import guards
from cudalint.rules import all_rules
from cudalint.rules.cud1_device import cuda_api_table
from cudalint.rules.cud1_device.cuda_api_table import lookup, table

APIS = table().apis
CODES = {rule.code for rule in all_rules()}

# Public names of torch.cuda that are not APIs (typing helpers, imported modules, constants).
NOT_APIS = frozenset({
    "Any", "Callable", "NewType", "Optional", "TYPE_CHECKING", "cast", "classproperty",
    "importlib", "lru_cache", "os", "platform", "threading", "torch", "traceback", "warnings",
    "Device", "DEVICE_REQUIREMENT", "PYTORCH_RELEASES_CODE_CC", "cudaStatus", "cudart",
    "check_error", "gds", "green_contexts", "sparse", "has_half", "has_magma",
    "caching_allocator_disabled", "caching_allocator_enable",
})

# Arguments for calling each zero-argument-unfriendly function on this CPU-only torch.
CALL_ARGS: dict[str, tuple[object, ...]] = {
    "manual_seed": (1,), "manual_seed_all": (1,), "set_device": (0,),
    "set_rng_state": (torch.zeros(8, dtype=torch.uint8),), "set_rng_state_all": ([],),
    "get_device_properties": (0,), "set_per_process_memory_fraction": (0.5,),
    "can_device_access_peer": (0, 1), "set_sync_debug_mode": (0,),
    "caching_allocator_alloc": (8,), "set_stream": (None,),
}


def test_every_entry_is_well_formed():
    for name, api in APIS.items():
        assert api.code is None or api.code in CODES, name
        assert api.message_for(name)
        if api.code == "CUD105":
            assert api.helper is not None, name
        if api.code == "CUD106" and api.portable is not None:
            assert api.device in ("first", "device_type"), name


@pytest.mark.parametrize("api", [a for a in APIS.values() if a.helper], ids=lambda a: a.name)
def test_helpers_exist_with_the_parameters_the_fix_checks(api):
    helper = getattr(device, api.helper)
    assert tuple(inspect.signature(helper).parameters) == api.params


def test_every_torch_cuda_name_is_classified():
    """A new torch.cuda API (after a torch upgrade) must be looked at, not fall to the
    default by accident."""
    missing = sorted(
        name for name in dir(torch.cuda)
        if not name.startswith("_") and name not in NOT_APIS
        and cuda_api_table.lookup(f"torch.cuda.{name}") is APIS["torch.cuda"]
    )
    assert missing == []


class _Stand:
    """What CPU code holds where CUDA code holds a stream or a memory pool: an object torch
    does not read off CUDA (a pool's `id` where it would)."""

    id = (0, 1)


_LIBC = ctypes.util.find_library("c") or "libc.so.6"

# How each API is used where a plain call with CALL_ARGS says nothing: with the objects CPU
# code has in hand (a CPU tensor, a stand-in stream or pool, a real shared library with an
# allocator's two functions), a context manager entered, an exception class caught.
USES: dict[str, Callable[[Any], object]] = {
    "stream": lambda f: _enter(f(_Stand())),
    "StreamContext": lambda f: _enter(f(_Stand())),
    "device": lambda f: _enter(f(0)),
    "device_of": lambda f: _enter(f(torch.zeros(1))),
    "use_mem_pool": lambda f: _enter(f(_Stand())),
    "CUDAPluggableAllocator": lambda f: f(_LIBC, "malloc", "free"),
    "ExternalStream": lambda f: f(1, device=0),
    "GreenContext": lambda f: f.create(num_sms=1, device_id=0),
    "get_stream_from_external": lambda f: f(1, device=0),
    "caching_allocator_delete": lambda f: f(1),
}

TABLE_BUGS: dict[str, str] = {}  # entries this CPU build contradicts (none known)


def _enter(manager: Any) -> None:
    with manager:
        pass


def _caught(exception: type[BaseException]) -> None:
    """An `except` clause naming it, meeting an exception (which is when Python reads it)."""
    try:
        raise KeyError("not it")
    except exception:
        pass
    except KeyError:
        pass


def _use(name: str) -> object:
    target = getattr(torch.cuda, name)
    if name in USES:
        return USES[name](target)
    if inspect.isclass(target) and issubclass(target, BaseException):
        return _caught(target)
    return target(*CALL_ARGS.get(name, ()))


def _off_cuda_cases() -> list[Any]:
    names = sorted(
        n.removeprefix("torch.cuda.") for n, a in APIS.items()
        if n.count(".") == 2 and n.startswith("torch.cuda.") and a.off_cuda != "returns-none"
        and callable(getattr(torch.cuda, n.removeprefix("torch.cuda."), None))
        and not inspect.ismodule(getattr(torch.cuda, n.removeprefix("torch.cuda."))))
    return [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=TABLE_BUGS[name]))
            if name in TABLE_BUGS else name for name in names]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only build")
@pytest.mark.parametrize("name", _off_cuda_cases())
def test_off_cuda_behaviour_matches_this_cpu_torch(name):
    """`raises` entries raise here (a CPU-only build, like the macOS wheel); the others run,
    used as code uses them."""
    api = APIS[f"torch.cuda.{name}"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _use(name)
        except Exception:
            raised = True
        else:
            raised = False
    assert raised == api.raises, name


def test_the_exception_classes_are_exceptions():
    """What the table lists without a code and without a probe is an exception class, which
    `_use` catches rather than calls."""
    for name, api in APIS.items():
        if name.startswith("torch.cuda.") and name.count(".") == 2 and api.code is None \
                and not api.probe and api.off_cuda != "returns-none":
            target = getattr(torch.cuda, name.removeprefix("torch.cuda."), None)
            if target is not None:
                assert inspect.isclass(target) and issubclass(target, BaseException), name


def test_lookup():
    assert lookup("torch.cuda.memory.empty_cache") is APIS["torch.cuda.empty_cache"]
    assert lookup("torch.cuda.nvtx.range_push") is APIS["torch.cuda.nvtx"]
    assert lookup("torch.cuda.amp.autocast_mode.autocast") is APIS["torch.cuda.amp.autocast"]
    assert lookup("torch.cuda.brand_new_api") is APIS["torch.cuda"]
    assert lookup("torch.cuda") is None  # the module itself
    assert lookup("torch.mps.synchronize") is None
    assert lookup("torch.backends.cudnn.conv.fp32_precision") is APIS["torch.backends.cudnn"]


def test_the_guards_use_the_tables_probes():
    nccl = {"torch.distributed.is_nccl_available",
            "torch.distributed.distributed_c10d.is_nccl_available"}  # CUDA builds only
    assert cuda_api_table.probes() | nccl == guards._PROBES
    assert "torch.cuda.is_available" in guards._PROBES

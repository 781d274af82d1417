"""The CUDA API table (data/torch_cuda_api.toml) against the helper and the installed torch."""

from __future__ import annotations

import inspect
import warnings

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


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only build")
@pytest.mark.parametrize(
    "name",
    sorted(n.removeprefix("torch.cuda.") for n, a in APIS.items()
           if n.count(".") == 2 and n.startswith("torch.cuda.") and a.off_cuda != "returns-none"
           and callable(getattr(torch.cuda, n.removeprefix("torch.cuda."), None))
           and not inspect.ismodule(getattr(torch.cuda, n.removeprefix("torch.cuda."))))
)
def test_off_cuda_behaviour_matches_this_cpu_torch(name):
    """`raises` entries raise here (a CPU-only build, like the macOS wheel); the others run."""
    api = APIS[f"torch.cuda.{name}"]
    if api.code is None and not api.probe:
        pytest.skip("exception classes are caught, not called")
    if name in ("stream", "device", "device_of", "use_mem_pool", "StreamContext",
                "CUDAPluggableAllocator", "ExternalStream", "GreenContext",
                "get_stream_from_external", "caching_allocator_delete"):
        pytest.skip("needs an object that only CUDA can make")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            getattr(torch.cuda, name)(*CALL_ARGS.get(name, ()))
        except Exception:
            raised = True
        else:
            raised = False
    assert raised == api.raises, name


def test_lookup():
    assert lookup("torch.cuda.memory.empty_cache") is APIS["torch.cuda.empty_cache"]
    assert lookup("torch.cuda.nvtx.range_push") is APIS["torch.cuda.nvtx"]
    assert lookup("torch.cuda.amp.autocast_mode.autocast") is APIS["torch.cuda.amp.autocast"]
    assert lookup("torch.cuda.brand_new_api") is APIS["torch.cuda"]
    assert lookup("torch.cuda") is None  # the module itself
    assert lookup("torch.mps.synchronize") is None
    assert lookup("torch.backends.cudnn.conv.fp32_precision") is APIS["torch.backends.cudnn"]


def test_the_guards_use_the_tables_probes():
    assert cuda_api_table.probes() == guards._PROBES
    assert "torch.cuda.is_available" in guards._PROBES

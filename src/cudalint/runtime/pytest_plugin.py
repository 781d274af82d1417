"""pytest plugin `cudalint`: run tests on every device this machine has.

- `device`: a fixture parametrised over the devices here (`cpu` always; `mps` on a Mac, `cuda`
  where CUDA is available). A project's own `device` fixture, or an explicit
  `@pytest.mark.parametrize("device", ...)`, takes precedence and is left alone.
- `assert_same_on_devices(fn, *, rtol=None, atol=None)`: run `fn(device)` seeded on CPU and on
  each accelerator here and assert the outputs match (also a fixture of that name).

The plugin loads in every pytest run where cudalint is installed, so it imports torch only when a
test asks for one of these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import torch


def available_devices() -> list[str]:
    """Device types to test on here: `cpu`, then `mps` and `cuda` where available."""
    try:
        import torch
    except ImportError:
        return []
    names = ["cpu"]
    if torch.backends.mps.is_built() and torch.backends.mps.is_available():
        names.append("mps")
    if torch.cuda.is_available():
        names.append("cuda")
    return names


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" not in metafunc.fixturenames:
        return
    if not _uses_our_device_fixture(metafunc) or _parametrizes_device(metafunc):
        return
    devices = available_devices()
    if devices:
        metafunc.parametrize("device", devices, indirect=True, ids=devices)


def _uses_our_device_fixture(metafunc: pytest.Metafunc) -> bool:
    # pytest keeps the resolved definitions privately; without them, leave the test alone
    # (the fixture then gives CPU).
    definitions = getattr(metafunc, "_arg2fixturedefs", {}).get("device")
    if not definitions:
        return False
    return getattr(definitions[-1].func, "__module__", None) == __name__


def _parametrizes_device(metafunc: pytest.Metafunc) -> bool:
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", "")
        if isinstance(names, str):
            names = [name.strip() for name in names.split(",")]
        if "device" in names:
            return True
    return False


@pytest.fixture
def device(request: pytest.FixtureRequest) -> torch.device:
    """A `torch.device` for each device this machine has (`cpu`, `mps`, `cuda`)."""
    torch = pytest.importorskip("torch")
    return torch.device(getattr(request, "param", "cpu"))


def assert_same_on_devices(
    fn: Callable[[torch.device], Any], *, rtol: float | None = None, atol: float | None = None
) -> None:
    """Run `fn(device)` with the same seed on CPU and on each accelerator here; raise
    AssertionError naming each output that differs, with its largest differences.

    Tolerances default per dtype as in `torch.testing.assert_close`. With no accelerator, `fn`
    runs on CPU only.
    """
    import torch

    from cudalint.runtime.smoke.compare import Tolerance, compare_outputs
    from cudalint.runtime.smoke.outputs import flatten
    from cudalint.runtime.smoke.seeding import seed_everything

    seed_everything(0)
    expected = flatten(fn(torch.device("cpu")))
    for name in available_devices()[1:]:
        seed_everything(0)
        actual = flatten(fn(torch.device(name)))
        problems = compare_outputs(actual, expected, Tolerance(rtol=rtol, atol=atol))
        if problems:
            lines = "\n".join(f"  {problem}" for problem in problems)
            raise AssertionError(f"outputs on {name} differ from cpu:\n{lines}")


@pytest.fixture(name="assert_same_on_devices")
def _assert_same_on_devices_fixture() -> Callable[..., None]:
    """`assert_same_on_devices` without an import."""
    return assert_same_on_devices

"""The pytest plugin: a `device` fixture over this machine's devices, and
`assert_same_on_devices`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from cudalint.runtime import pytest_plugin
from cudalint.runtime.pytest_plugin import assert_same_on_devices

pytest_plugins = ["pytester"]

# The plugin under test by module name, whether or not the installed entry point loaded it.
PLUGIN = ("-p", "no:cudalint", "-p", "cudalint.runtime.pytest_plugin")


@pytest.fixture
def accelerators(monkeypatch: pytest.MonkeyPatch) -> None:
    """MPS and CUDA both 'available' (the tests never put a tensor on them)."""
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: True)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)


def test_device_fixture_without_accelerators(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    pytester.makepyfile(
        """
        import torch

        def test_runs(device):
            assert device == torch.device("cpu")
            assert torch.ones(2, device=device).sum().item() == 2
        """
    )
    result = pytester.runpytest(*PLUGIN, "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_runs?cpu? PASSED*"])


def test_device_fixture_covers_each_accelerator(
    pytester: pytest.Pytester, accelerators: None
) -> None:
    pytester.makepyfile(
        """
        def test_types(device):
            assert device.type in {"cpu", "mps", "cuda"}
        """
    )
    result = pytester.runpytest(*PLUGIN, "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_types?cpu? PASSED*", "*test_types?mps? PASSED*",
                                 "*test_types?cuda? PASSED*"])


def test_projects_own_device_fixture_wins(pytester: pytest.Pytester, accelerators: None) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def device():
            return "theirs"
        """
    )
    pytester.makepyfile(
        """
        def test_theirs(device):
            assert device == "theirs"
        """
    )
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=1)


def test_explicit_parametrize_is_left_alone(pytester: pytest.Pytester, accelerators: None) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("device", ["cpu"], indirect=True)
        def test_once(device):
            assert device.type == "cpu"

        @pytest.mark.parametrize("x, device", [(1, "a"), (2, "b")])
        def test_direct(x, device):
            assert device in "ab"
        """
    )
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=3)


def test_assert_same_on_devices_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import torch

        def test_same(assert_same_on_devices):
            def step(device):
                # Made on the CPU and moved: random streams differ between devices.
                model = torch.nn.Linear(3, 2).to(device)
                return {"out": model(torch.randn(4, 3).to(device)), "n": 4}

            assert_same_on_devices(step)
        """
    )
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=1)


def test_assert_same_on_devices_names_what_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pytest_plugin, "available_devices", lambda: ["cpu", "mps"])
    seen: list[str] = []

    def step(device: torch.device) -> dict[str, object]:
        seen.append(device.type)
        logits = torch.randn(2, 2)  # made on CPU: no MPS here
        if device.type == "mps":
            logits[1, 0] += 0.25
        return {"logits": logits, "steps": 3}

    with pytest.raises(AssertionError, match=r"(?s)outputs on mps differ from cpu:.*logits: 1 of 4"
                                             r" elements differ.*max abs diff 0\.25 at \[1, 0\]"):
        assert_same_on_devices(step)
    assert seen == ["cpu", "mps"]


def test_assert_same_on_devices_seeds_each_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pytest_plugin, "available_devices", lambda: ["cpu", "mps"])
    assert_same_on_devices(lambda device: torch.randn(5))


def test_assert_same_on_devices_tolerance(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pytest_plugin, "available_devices", lambda: ["cpu", "cuda"])

    def step(device: torch.device) -> torch.Tensor:
        return torch.ones(3) + (1e-3 if device.type == "cuda" else 0.0)

    with pytest.raises(AssertionError):
        assert_same_on_devices(step)
    assert_same_on_devices(step, atol=1e-2)


def test_plugin_import_does_not_import_torch() -> None:
    code = ("import sys, cudalint.runtime.pytest_plugin; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    env = {"PYTHONPATH": str(Path(pytest_plugin.__file__).resolve().parents[2])}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, check=False)
    assert result.returncode == 0, result.stderr

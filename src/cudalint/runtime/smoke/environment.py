"""The machine, the torch build, and what PYTORCH_ENABLE_MPS_FALLBACK was when torch read it.

torch reads PYTORCH_ENABLE_MPS_FALLBACK once, while it is imported. `TorchImportWatch` records
the variable at that moment:
- torch already imported when `cudalint smoke` started (an in-process caller): the value torch
  saw is unknown; the value at start is reported as the best guess.
- otherwise a `sys.meta_path` finder notes the value when `import torch` first runs, whether
  the target's module imports torch (after setting the variable at its top, as scripts do) or
  the harness does after loading the target.
A value that differs afterwards was set too late to matter, and is reported as such.
"""

from __future__ import annotations

import importlib.abc
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cudalint.runtime.smoke.report import Check, Status

if TYPE_CHECKING:
    import importlib.machinery
    import types

    import torch

FALLBACK_VAR = "PYTORCH_ENABLE_MPS_FALLBACK"


@dataclass
class TorchImportWatch:
    """PYTORCH_ENABLE_MPS_FALLBACK at the start and at the moment torch was imported."""

    already_imported: bool
    at_start: str | None
    at_import: str | None = None
    seen_import: bool = False
    _finder: _TorchImportSpy | None = field(default=None, repr=False)

    @classmethod
    def start(cls) -> TorchImportWatch:
        watch = cls(already_imported="torch" in sys.modules, at_start=os.environ.get(FALLBACK_VAR))
        if not watch.already_imported:
            watch._finder = _TorchImportSpy(watch)
            sys.meta_path.insert(0, watch._finder)
        return watch

    def stop(self) -> None:
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        self._finder = None

    def effective(self) -> str | None:
        """The value torch saw, as well as it is known."""
        return self.at_import if self.seen_import else self.at_start

    def describe(self) -> dict[str, Any]:
        now = os.environ.get(FALLBACK_VAR)
        return {
            "value_torch_saw": self.effective(),
            "value_now": now,
            "torch_imported_before_smoke": self.already_imported,
            "enabled": fallback_enabled(self.effective()),
            "set_too_late": self.seen_import and now != self.at_import,
        }


class _TorchImportSpy(importlib.abc.MetaPathFinder):
    """Notes the variable when `import torch` first looks for torch; finds nothing itself."""

    def __init__(self, watch: TorchImportWatch) -> None:
        self._watch = watch
        self._fired = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        # Only the first look counts; the finder stays in place until `stop()`, since removing
        # it here would make the import machinery skip the next finder.
        if fullname == "torch" and not self._fired:
            self._fired = True
            self._watch.at_import = os.environ.get(FALLBACK_VAR)
            self._watch.seen_import = True
        return None


def fallback_enabled(value: str | None) -> bool:
    """torch enables the fallback when the variable holds a non-zero integer."""
    try:
        return value is not None and int(value) != 0
    except ValueError:
        return False


def rosetta_translated() -> bool | None:
    """True when this Python runs under Rosetta 2 on Apple Silicon; None where it can't be told."""
    if platform.system() != "Darwin":
        return False
    try:
        result = subprocess.run(
            ["sysctl", "-n", "sysctl.proc_translated"],
            capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    # Intel Macs lack the key (non-zero exit): not translated.
    return result.returncode == 0 and result.stdout.strip() == "1"


def macos_version() -> tuple[int, ...] | None:
    if platform.system() != "Darwin":
        return None
    release = platform.mac_ver()[0]
    try:
        return tuple(int(part) for part in release.split("."))
    except ValueError:
        return None


def mps_unavailable_reason() -> str | None:
    """Why MPS can't be used here, in a sentence; None when it can."""
    import torch

    if torch.backends.mps.is_built() and torch.backends.mps.is_available():
        return None
    if platform.system() != "Darwin":
        return f"MPS exists only on macOS (this is {platform.system()})"
    if rosetta_translated():
        return ("Python runs under Rosetta 2 (x86_64) on Apple Silicon, where MPS is "
                "unavailable; use an arm64 Python")
    if not torch.backends.mps.is_built():
        return f"this torch build ({torch.__version__}) has no MPS support"
    version = macos_version()
    if version is not None and version < (14,):
        return (f"torch {torch.__version__} needs macOS 14 or later for MPS "
                f"(this is {_dotted(version)})")
    return "torch reports MPS as unavailable on this Mac"


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def collect(device: torch.device, watch: TorchImportWatch) -> dict[str, Any]:
    import torch

    version = macos_version()
    return {
        "python": platform.python_version(),
        "os": platform.system(),
        "os_release": _dotted(version) if version else platform.release(),
        "machine": platform.machine(),
        "rosetta": rosetta_translated(),
        "torch": torch.__version__,
        "cuda_available": torch.cuda.is_available(),
        "cuda_version": torch.version.cuda,
        "mps_built": torch.backends.mps.is_built(),
        "mps_available": torch.backends.mps.is_available(),
        "device": str(device),
        "device_name": _device_name(device),
        FALLBACK_VAR: watch.describe(),
    }


def precision(autocast: set[str]) -> dict[str, Any]:
    """The precision mode the target ran in: the default dtype and float32 matmul precision
    after its run, and the autocast modes that were on while its ops ran."""
    import torch

    return {
        "default_dtype": str(torch.get_default_dtype()).removeprefix("torch."),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "autocast": sorted(autocast),
    }


def _device_name(device: torch.device) -> str:
    import torch

    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device))
    if device.type == "mps":
        from cudalint.device import _mac_chip_name

        return _mac_chip_name()
    return platform.processor() or platform.machine()


def environment_check(env: dict[str, Any]) -> Check:
    summary = (
        f"Python {env['python']} on {env['os']} {env['os_release']} {env['machine']}; "
        f"torch {env['torch']}; CUDA available={env['cuda_available']}; "
        f"MPS built={env['mps_built']} available={env['mps_available']}; "
        f"{_fallback_summary(env[FALLBACK_VAR])}"
    )
    issues = _issues(env)
    status = Status.WARN if issues else Status.PASS
    return Check("environment", status, "; ".join([summary, *issues]))


def _fallback_summary(fallback: dict[str, Any]) -> str:
    value = fallback["value_torch_saw"]
    state = "on" if fallback["enabled"] else "off"
    shown = "unset" if value is None else repr(value)
    suffix = " (torch was imported before smoke started)" if fallback[
        "torch_imported_before_smoke"] else ""
    return f"{FALLBACK_VAR} {shown} when torch was imported: CPU fallback {state}{suffix}"


def _issues(env: dict[str, Any]) -> list[str]:
    issues = []
    if env["rosetta"]:
        issues.append("Python runs under Rosetta 2 (x86_64 on Apple Silicon): MPS is unavailable; "
                      "install an arm64 Python")
    if env["os"] == "Darwin" and env["mps_built"] and not env["mps_available"]:
        issues.append("MPS is built but unavailable (torch 2.13 needs macOS 14 or later)")
    fallback = env[FALLBACK_VAR]
    if fallback["set_too_late"]:
        issues.append(f"{FALLBACK_VAR} changed to {fallback['value_now']!r} after torch was "
                      "imported; torch reads it only at import, so set it before `import torch`")
    return issues

"""TARGET: find the function, load its module, call it with a device."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from cudalint.runtime.smoke.crash import Crash, crash_from
from cudalint.runtime.smoke.errors import HarnessError
from cudalint.runtime.smoke.seeding import seed_everything

if TYPE_CHECKING:
    import torch

DEFAULT_BATCH_SIZE = 4
_FORMS = "path/to/file.py:function or package.module:function"


@dataclass(frozen=True)
class TargetSpec:
    text: str
    location: str  # a file path or a dotted module name
    function: str  # an attribute path in that module, e.g. "train_step" or "Trainer.step"
    is_file: bool

    @property
    def identity(self) -> str:
        """What a saved reference is matched on: module name and function, the same whether
        the file is named by path or by module, and on any machine."""
        stem = Path(self.location).stem if self.is_file else self.location.rpartition(".")[2]
        return f"{stem}:{self.function}"


@dataclass(frozen=True)
class Target:
    spec: TargetSpec
    function: Callable[..., Any]
    source: Path | None  # the target's file, to find the user's frame in a traceback


class TargetCrashed(Exception):
    """The target's module raised while being imported."""

    def __init__(self, crash: Crash) -> None:
        super().__init__(crash.summary())
        self.crash = crash


@dataclass(frozen=True)
class Outcome:
    output: Any
    crash: Crash | None
    seconds: float


def parse_target(text: str) -> TargetSpec:
    location, colon, function = text.rpartition(":")
    if not colon or not location or not function:
        raise HarnessError(f"TARGET must be {_FORMS}, not {text!r}")
    if not all(part.isidentifier() for part in function.split(".")):
        raise HarnessError(f"{function!r} in TARGET {text!r} is not a function name")
    is_file = location.endswith(".py") or "/" in location or os.sep in location
    if not is_file and not all(part.isidentifier() for part in location.split(".")):
        raise HarnessError(f"TARGET must be {_FORMS}, not {text!r}")
    return TargetSpec(text=text, location=location, function=function, is_file=is_file)


def load_target(spec: TargetSpec) -> Target:
    """Import the target's module (raising TargetCrashed if it raises) and find the function."""
    module = _load_file(Path(spec.location)) if spec.is_file else _import_module(spec)
    function: Any = module
    for part in spec.function.split("."):
        if not hasattr(function, part):
            raise HarnessError(f"{spec.location} has no function {spec.function!r}")
        function = getattr(function, part)
    if not callable(function):
        raise HarnessError(f"{spec.location}:{spec.function} is not a function")
    _check_signature(function, spec)
    source = Path(module.__file__) if module.__file__ else None
    return Target(spec=spec, function=function, source=source)


def _load_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise HarnessError(f"no such file: {path}")
    resolved = path.resolve()
    # The target's folder comes first, so `from model import Net` finds its sibling.
    folder = str(resolved.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    stem = re.sub(r"\W", "_", path.stem)
    name = f"_cudalint_smoke_{stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise HarnessError(f"cannot load {path} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:
        del sys.modules[name]
        raise TargetCrashed(crash_from(exc, resolved, phase="import")) from None
    return module


def _import_module(spec: TargetSpec) -> ModuleType:
    # As `python -m` does, so a project's packages import from where the command runs.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(spec.location)
    except ModuleNotFoundError as exc:
        if exc.name and (spec.location + ".").startswith(exc.name + "."):
            raise HarnessError(f"no module named {exc.name!r} (TARGET {spec.text!r})") from None
        raise TargetCrashed(crash_from(exc, None, phase="import")) from None
    except (Exception, SystemExit, KeyboardInterrupt) as exc:
        raise TargetCrashed(crash_from(exc, None, phase="import")) from None


def _arguments(
    signature: inspect.Signature, device: Any
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    parameters = signature.parameters
    kwargs: dict[str, Any] = {}
    batch = parameters.get("batch_size")
    if batch is not None and batch.default is inspect.Parameter.empty:
        kwargs["batch_size"] = DEFAULT_BATCH_SIZE
    named = parameters.get("device")
    if named is not None and named.kind is inspect.Parameter.KEYWORD_ONLY:
        return (), {"device": device, **kwargs}
    return (device,), kwargs


def _check_signature(function: Callable[..., Any], spec: TargetSpec) -> None:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    args, kwargs = _arguments(signature, object())
    try:
        signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise HarnessError(
            f"{spec.text} must take a torch.device as its argument, as in "
            f"`def {spec.function.rpartition('.')[2]}(device)`: {exc}"
        ) from None


def _call_arguments(
    target: Target, device: Any, overrides: dict[str, Any] | None = None
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    try:
        args, kwargs = _arguments(inspect.signature(target.function), device)
    except (TypeError, ValueError):
        args, kwargs = (device,), {}
    return args, {**kwargs, **(overrides or {})}


def parameters(target: Target) -> frozenset[str]:
    """The names of the target's parameters (empty when they can't be read)."""
    try:
        return frozenset(inspect.signature(target.function).parameters)
    except (TypeError, ValueError):
        return frozenset()


def describe_call(target: Target, device: torch.device) -> str:
    args, kwargs = _call_arguments(target, device)
    shown = [str(arg) for arg in args] + [f"{key}={value}" for key, value in kwargs.items()]
    return f"{target.spec.function}({', '.join(shown)})"


def run_target(target: Target, device: torch.device,
               overrides: dict[str, Any] | None = None) -> Outcome:
    """Seed, then call the target with `device` (and `overrides`, e.g. `batch_size=8`); an
    exception becomes `Outcome.crash`."""
    args, kwargs = _call_arguments(target, device, overrides)
    if "checkpoint_dir" in parameters(target) and "checkpoint_dir" not in kwargs:
        # A target written for --kill-after saves as it goes: a run without the kill gives it a
        # folder of its own, so that `Path(checkpoint_dir)` never meets None.
        with tempfile.TemporaryDirectory(prefix="cudalint-checkpoints-") as folder:
            return run_target(target, device, {**(overrides or {}), "checkpoint_dir": folder})
    started = time.perf_counter()
    with device_override(device):
        seed_everything()
        try:
            output = target.function(*args, **kwargs)
        except (Exception, SystemExit, KeyboardInterrupt) as exc:
            crash = crash_from(exc, target.source, phase="run")
            return Outcome(None, crash, time.perf_counter() - started)
    return Outcome(output, None, time.perf_counter() - started)


@contextmanager
def device_override(device: torch.device) -> Iterator[None]:
    """Point the helper's `pick_device()` (CUDALINT_DEVICE) at `device` while the target runs,
    so code inside the target that picks its own device agrees with the harness."""
    from cudalint.device import ENV_VAR
    from cudalint.runtime.smoke.scoped_env import scoped_env

    with scoped_env(ENV_VAR, str(device)):
        yield

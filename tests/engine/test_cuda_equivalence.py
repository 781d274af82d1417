"""CUDA equivalence of the fixes, without a GPU.

Every fix example of CUD1-CUD7 (the rules' INVALID examples with `fixed`) runs twice, as
written and as fixed, with torch's device entry points intercepted: `Tensor.cuda/.to`,
`Module.cuda/.to`, the tensor factories' `device=`, `torch.load(map_location=)`,
`torch.set_default_device`, `init_process_group` and the `torch.cuda` functions the helper
replaces record the device they were given and allocate nothing on a GPU. Functions the
snippet defines are called with stand-in arguments. With CUDA present (patched), the fixed
code must record exactly what the original recorded: the very devices it named. With CUDA
absent it must run and only ever name the CPU (or MPS, when MPS is patched present). The
same holds for each fix the fixtures (`fixtures/demo`, `fixtures/research_repo`) get, evaluated
expression by expression.
"""

from __future__ import annotations

import ast
import builtins
import re
import types
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import libcst as cst
import pytest
import torch
import torch.distributed as dist

from cudalint import device as helper
from cudalint.config import Config
from cudalint.engine.contract import PythonRule
from cudalint.engine.lint.python import lint_python
from cudalint.engine.project import facts as project
from cudalint.rules import all_rules
from tests.lint import run_on

_ORDINAL = re.compile(r"(rank|gpu|gpu_id|device_id|local_rank|idx|index)$", re.IGNORECASE)
_FLAG = re.compile(r"^(use_\w+|amp|fp16|enabled|\w+_enabled)$")
_FACTORIES = ("zeros", "ones", "empty", "rand", "randn", "tensor", "full", "arange",
              "randint", "zeros_like", "ones_like", "empty_like", "randn_like")
_CUDA_FUNCTIONS = {
    "synchronize": None, "empty_cache": None, "manual_seed": None, "manual_seed_all": None,
    "memory_allocated": 1024, "max_memory_allocated": 2048, "memory_reserved": 4096,
    "max_memory_reserved": 8192, "reset_peak_memory_stats": None, "set_device": None,
    "current_device": 0, "get_device_name": "NVIDIA H200",
}


class Trace:
    """What a run did to devices, in order."""

    def __init__(self, cuda: bool) -> None:
        self.cuda = cuda
        self.events: list[tuple[Any, ...]] = []

    def device(self, value: Any) -> Any:
        """A device argument as the device it means: `"cuda"` and `0` are the current CUDA
        device (cuda:0 here), a `torch.device` or string is itself."""
        if isinstance(value, Stub) or value is None:
            return value if value is None else "stub"
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            value = torch.device("cuda", value) if self.cuda else torch.device("cpu")
        if isinstance(value, str):
            try:
                value = torch.device(value)
            except RuntimeError:
                return value
        if isinstance(value, torch.device):
            if value.type == "cuda" and value.index is None:
                return "cuda:0"
            return str(value)
        if isinstance(value, torch.dtype):
            return str(value)
        return type(value).__name__

    def note(self, *event: Any) -> None:
        self.events.append(event)

    def devices(self) -> set[str]:
        return {str(d).split(":")[0] for e in self.events for d in e[1:]
                if isinstance(d, str) and d.split(":")[0] in ("cuda", "cpu", "mps", "xpu")}


class Stub:
    """Any object the snippet uses but does not define: a model, a batch, a parser."""

    def __init__(self, trace: Trace, name: str = "stub") -> None:
        self._trace, self._name = trace, name

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            self._trace.note("set", name, _meaning(self._trace, value))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return 1 if _ORDINAL.search(name) else Stub(self._trace, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Stub:
        self._trace.note("call", self._name, *_meanings(self._trace, args, kwargs))
        return Stub(self._trace, f"{self._name}()")

    def cuda(self, device: Any = None, non_blocking: bool = False) -> Stub:
        self._trace.note(*_cuda_move(self._trace, device, non_blocking))
        return self

    def to(self, *args: Any, **kwargs: Any) -> Stub:
        self._trace.note(*_to_move(self._trace, args, kwargs))
        return self

    def type(self, kind: Any = None, non_blocking: bool = False) -> Stub:
        legacy = _legacy(kind)
        if legacy is not None:
            self._trace.note("move", "cuda:0", str(legacy.dtype), non_blocking)
        return self

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __enter__(self) -> Stub:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __bool__(self) -> bool:
        return True

    def __getitem__(self, key: Any) -> Stub:
        return Stub(self._trace)


def _current_cuda(device: Any) -> Any:
    return torch.device("cuda", 0) if device is None else device


def _meanings(trace: Trace, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    values = [*args, *sorted(kwargs.items())]
    return [(v[0], trace.device(v[1])) if isinstance(v, tuple) else trace.device(v)
            for v in values]


def _cuda_move(trace: Trace, device: Any, non_blocking: bool) -> tuple[Any, ...]:
    return ("move", trace.device(_current_cuda(device)), None, bool(non_blocking))


def _to_move(trace: Trace, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """`.to(device, dtype, non_blocking, copy)` / `.to(dtype)` / `.to(other_tensor)`."""
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    non_blocking = kwargs.get("non_blocking", False)
    for value in args:
        if isinstance(value, torch.dtype):
            dtype = value
        elif isinstance(value, bool):
            non_blocking = value
        elif device is None:
            device = value
    return ("move", trace.device(device), None if dtype is None else str(dtype),
            bool(non_blocking))


_TENSOR, _EMPTY = torch.tensor, torch.empty
_AUTOCAST = torch.amp.autocast_mode.autocast


class LegacyType:
    """`torch.cuda.FloatTensor` and its kin: made on the current CUDA device."""

    def __init__(self, trace: Trace, dtype: torch.dtype) -> None:
        self.trace, self.dtype = trace, dtype

    def __call__(self, *args: Any) -> Any:
        data = len(args) == 1 and isinstance(args[0], (list, tuple))
        self.trace.note("tensor" if data else "empty", "cuda:0", str(self.dtype))
        return _TENSOR(args[0], dtype=self.dtype) if data else _EMPTY(*args, dtype=self.dtype)


def _legacy(kind: Any) -> LegacyType | None:
    """`torch.cuda.HalfTensor`, or its name as a string."""
    if isinstance(kind, str) and kind.startswith("torch.cuda."):
        kind = getattr(torch.cuda, kind.removeprefix("torch.cuda."), None)
    return kind if isinstance(kind, LegacyType) else None


_LEGACY = {"Float": torch.float32, "Double": torch.float64, "Half": torch.float16,
           "BFloat16": torch.bfloat16, "Byte": torch.uint8, "Char": torch.int8,
           "Short": torch.int16, "Int": torch.int32, "Long": torch.int64, "Bool": torch.bool}


def _patch(monkeypatch: pytest.MonkeyPatch, trace: Trace, *, mps: bool) -> None:
    cuda = trace.cuda
    monkeypatch.delenv(helper.ENV_VAR, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8 if cuda else 0)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: mps)
    monkeypatch.setattr(torch.accelerator, "current_accelerator",
                        lambda check_available=False: None)
    for name, result in _CUDA_FUNCTIONS.items():
        monkeypatch.setattr(torch.cuda, name, _recorder(trace, f"cuda.{name}", result))
    for alias, name in (("memory_cached", "memory_reserved"),
                        ("max_memory_cached", "max_memory_reserved")):
        monkeypatch.setattr(torch.cuda, alias, _recorder(trace, f"cuda.{name}",
                                                         _CUDA_FUNCTIONS[name]))
    for name, result in (("synchronize", None), ("empty_cache", None), ("manual_seed", None),
                         ("current_allocated_memory", 0), ("driver_allocated_memory", 0),
                         ("set_rng_state", None)):
        monkeypatch.setattr(torch.mps, name, _recorder(trace, f"mps.{name}", result))
    monkeypatch.setattr(torch.mps, "get_rng_state", lambda: _EMPTY(0, dtype=torch.uint8))
    monkeypatch.setattr(torch.mps.event, "Event", lambda **k: Stub(trace, "mps.Event"))

    def event(enable_timing: bool = False, blocking: bool = False,
              interprocess: bool = False) -> Stub:
        trace.note("cuda.Event", enable_timing, blocking, interprocess)
        return Stub(trace, "Event")

    monkeypatch.setattr(torch.cuda, "Event", event)
    _patch_amp(monkeypatch, trace)

    def move(kind: str) -> Callable[..., Any]:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            if kind == "cuda":
                device = args[0] if args else kwargs.get("device")
                trace.note(*_cuda_move(trace, device, kwargs.get("non_blocking", False)))
            elif kind == "type":
                legacy = _legacy(args[0] if args else kwargs.get("dtype"))
                if legacy is not None:
                    trace.note("move", "cuda:0", str(legacy.dtype),
                               bool(kwargs.get("non_blocking", False)))
            else:
                trace.note(*_to_move(trace, args, kwargs))
            return self
        return method

    monkeypatch.setattr(torch.Tensor, "type", move("type"))
    for prefix, dtype in _LEGACY.items():
        monkeypatch.setattr(torch.cuda, f"{prefix}Tensor", LegacyType(trace, dtype))

    for owner in (torch.Tensor, torch.nn.Module):
        monkeypatch.setattr(owner, "cuda", move("cuda"))
        monkeypatch.setattr(owner, "to", move("to"))
    for name in _FACTORIES:
        monkeypatch.setattr(torch, name, _factory(trace, name, getattr(torch, name)))
    monkeypatch.setattr(torch, "load", lambda *a, **k: trace.note(
        "load", trace.device(k.get("map_location", a[1] if len(a) > 1 else None))) or {})
    monkeypatch.setattr(torch, "set_default_device",
                        lambda d: trace.note("set_default_device", trace.device(d)))
    monkeypatch.setattr(dist, "init_process_group", lambda *a, **k: trace.note(
        "init_process_group", str(k.get("backend", a[0] if a else None)).lower()))
    monkeypatch.setattr(dist, "is_nccl_available", lambda: cuda)


def _patch_amp(monkeypatch: pytest.MonkeyPatch, trace: Trace) -> None:
    """autocast (torch.cuda.amp's is a subclass) and custom_fwd/bwd record their device type;
    nothing is entered or wrapped."""
    def init(self: Any, device_type: str, dtype: Any = None, enabled: Any = True,
             cache_enabled: Any = None) -> None:
        default = torch.float16 if device_type in ("cuda", "mps") else torch.bfloat16
        self.device = device_type
        trace.note("autocast", device_type, str(dtype or default), _meaning(trace, enabled),
                   True if cache_enabled is None else _meaning(trace, cache_enabled))

    monkeypatch.setattr(_AUTOCAST, "__init__", init)
    monkeypatch.setattr(_AUTOCAST, "__enter__", lambda self: None)
    monkeypatch.setattr(_AUTOCAST, "__exit__", lambda self, *exc: None)
    monkeypatch.setattr(_AUTOCAST, "__call__", lambda self, func: func)

    def decorator(name: str) -> Callable[..., Any]:
        def custom(fwd: Any = None, *, device_type: str, cast_inputs: Any = None) -> Any:
            trace.note(name, device_type, str(cast_inputs))
            return (lambda f: f) if fwd is None else fwd
        return custom

    monkeypatch.setattr(torch.amp, "custom_fwd", decorator("custom_fwd"))
    monkeypatch.setattr(torch.amp, "custom_bwd", decorator("custom_bwd"))


def _recorder(trace: Trace, name: str, result: Any) -> Callable[..., Any]:
    """A torch.cuda function: `f(None)` is `f()`, `f(device=d)` is `f(d)`."""
    def function(*args: Any, **kwargs: Any) -> Any:
        values = [*args, *([kwargs.pop("device")] if "device" in kwargs else [])]
        while values and values[-1] is None:
            values.pop()
        trace.note(name, *[trace.device(a) if not isinstance(a, int) else a for a in values],
                   *sorted(kwargs.items()))
        return result
    return function


def _factory(trace: Trace, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def make(*args: Any, **kwargs: Any) -> Any:
        device = kwargs.pop("device", None)
        trace.note(name, trace.device(device), str(kwargs.get("dtype")))
        return original(*args, **kwargs)
    return make


# -- running a snippet -------------------------------------------------------------------------
def _free_names(tree: ast.AST) -> set[str]:
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Load)}
    return {n for n in loaded if not hasattr(builtins, n)}


def _argument(trace: Trace, name: str) -> Any:
    """A stand-in for a parameter: an index, a `torch.device`, or any object."""
    if _ORDINAL.search(name):
        return 1
    if _FLAG.search(name):
        return True
    if name in ("device", "dev"):
        return torch.device("cuda", 1)
    return Stub(trace, name)


def _run(source: str, trace: Trace) -> None:
    tree = ast.parse(source)
    namespace: dict[str, Any] = {"__name__": "snippet", "torch": torch}
    stand_ins = _free_names(tree) - {"torch"}
    for name in stand_ins:
        namespace[name] = _argument(trace, name)
    defined = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    try:
        exec(compile(tree, "snippet.py", "exec"), namespace)
    except Exception as error:  # the same failure on both sides is equivalent
        trace.note("raised", type(error).__name__)
        return
    for name, node in defined.items():
        function = namespace[name]
        trace.note("defaults", name, _meaning(trace, getattr(function, "__defaults__", None)))
        args = [_argument(trace, a.arg) for a in node.args.args]
        try:
            trace.note("returned", name, _meaning(trace, function(*args)))
        except Exception as error:
            trace.note("raised", name, type(error).__name__)
    imported = {a.asname or a.name for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    for name, value in sorted(namespace.items()):
        if name.startswith("__") or name in imported or name in stand_ins \
                or isinstance(value, (Stub, types.ModuleType)):
            continue
        if isinstance(value, type):
            trace.note("class", name, _meaning(trace, [v for k, v in sorted(vars(value).items())
                                                       if not k.startswith("__")]))
        elif not callable(value) or isinstance(value, torch.amp.GradScaler):
            trace.note("value", name, _meaning(trace, value))


def _meaning(trace: Trace, value: Any) -> Any:
    """A value as the device it names, element by element for lists and tuples."""
    if isinstance(value, (list, tuple)):
        return tuple(_meaning(trace, v) for v in value)
    if isinstance(value, torch.amp.GradScaler):
        return ("GradScaler", trace.device(value._device))
    if isinstance(value, (str, int, torch.device)) or value is None:
        return trace.device(value)
    return type(value).__name__


def _trace(source: str, monkeypatch: pytest.MonkeyPatch, *, cuda: bool, mps: bool = False,
           ) -> Trace:
    trace = Trace(cuda)
    with monkeypatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _patch(patch, trace, mps=mps)
        _run(source, trace)
    return trace


def _cud_rules() -> Iterator[tuple[type[PythonRule], int]]:
    for rule in all_rules():
        if not issubclass(rule, PythonRule) or rule.code[:4] not in {f"CUD{i}" for i in
                                                                     range(1, 8)}:
            continue
        for index, example in enumerate(rule.INVALID):
            if example.fixed is not None and example.path.endswith(".py"):
                yield rule, index


FIX_EXAMPLES = [pytest.param(rule, index, id=f"{rule.code}-{index}")
                for rule, index in _cud_rules()]


# Unsafe fixes that change what the code does on CUDA, which is why they are unsafe; the
# harness still checks that they run off CUDA.
_NOT_EQUIVALENT = {
    "CUD111": "adds `map_location=pick_device()` where none was given: on CUDA a checkpoint "
              "saved on another GPU now loads to the current one",
}
# What the harness cannot build without an accelerator.
_CANNOT_RUN_ORIGINAL = {
    ("CUD113", 1): "`torch.device(<int>)` needs a real accelerator to construct",
}


@pytest.mark.parametrize(("rule", "index"), FIX_EXAMPLES)
def test_every_fix_example_is_equivalent_on_cuda_and_portable_off_it(monkeypatch, rule, index):
    example = rule.INVALID[index]
    assert example.fixed is not None
    fixed = _trace(example.fixed, monkeypatch, cuda=True)
    assert fixed.events, "the example does nothing observable"
    if not (example.unsafe and rule.code in _NOT_EQUIVALENT) \
            and (rule.code, index) not in _CANNOT_RUN_ORIGINAL:
        assert fixed.events == _trace(example.code, monkeypatch, cuda=True).events
    for mps in (False, True):
        off = _trace(example.fixed, monkeypatch, cuda=False, mps=mps)
        assert not [e for e in off.events if e[0] == "raised"], off.events
        assert off.devices() <= {"mps" if mps else "cpu", "cpu"}, off.events


# -- the fixtures -------------------------------------------------------------------------------
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _fixture_fixes() -> Iterator[tuple[str, str, str]]:
    """(where, original expression, fixed expression) for each expression fix of the
    fixtures' Python files."""
    rules = tuple(r for r in all_rules() if issubclass(r, PythonRule))
    for root in (FIXTURES / "demo", FIXTURES / "research_repo"):
        settings = project.settings_for(Config(root=root))
        for path in sorted(root.rglob("*.py")):
            result = lint_python(path.read_bytes(), path, rules, settings)
            module = result.module
            for finding, fix, _where in result.fixes:
                if module is None or not isinstance(fix.target, cst.BaseExpression):
                    continue
                where = f"{path.relative_to(FIXTURES)}:{finding.location.row}:{finding.code}"
                yield (where, module.code_for_node(fix.target),
                       module.code_for_node(fix.replacement))


FIXTURE_FIXES = [pytest.param(before, after, id=where) for where, before, after in
                 _fixture_fixes()]


def _expression(code: str) -> str:
    names = "\n".join(f"from cudalint.device import {n}" for n in helper.__all__)
    return f"{names}\nresult = {' '.join(code.split())}\n"


@pytest.mark.parametrize(("before", "after"), FIXTURE_FIXES)
def test_every_fixture_fix_is_equivalent_on_cuda(monkeypatch, before, after):
    original = _trace(_expression(before), monkeypatch, cuda=True)
    fixed = _trace(_expression(after), monkeypatch, cuda=True)
    assert fixed.events == original.events
    off = _trace(_expression(after), monkeypatch, cuda=False)
    assert off.devices() <= {"cpu"}, off.events


def test_the_fixtures_have_fixes_to_compare():
    assert len(FIXTURE_FIXES) >= 10


def test_the_run_sees_a_wrong_device(monkeypatch):
    """The comparison has teeth: a fix that dropped the index would be caught."""
    original = _trace("import torch\nx = torch.ones(2).cuda(1)\n", monkeypatch, cuda=True)
    wrong = _trace("from cudalint.device import pick_device\nimport torch\n"
                   "x = torch.ones(2).to(pick_device())\n", monkeypatch, cuda=True)
    assert original.events != wrong.events


def test_chained_device_strings_are_not_wrapped(tmp_path, monkeypatch):
    """`x.cuda("cuda:1")` becomes `x.to(pick_device(1))`, never `pick_device(str(...))`."""
    source = "def put(x):\n    return x.cuda('cuda:1')\n"
    _, after = run_on(tmp_path, source, fix=True)
    assert after.decode().endswith("    return x.to(pick_device(1))\n")
    assert _trace(after.decode(), monkeypatch, cuda=True).events == \
        _trace(source, monkeypatch, cuda=True).events

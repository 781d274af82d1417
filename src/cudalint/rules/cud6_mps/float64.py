"""CUD601: float64 (or complex128) tensors on a device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import Invalid
from cudalint.engine.first_pass.prefilter import GAP, Terms, word
from cudalint.engine.walk.visiting import find_all
from cudalint.finding import Severity
from cudalint.rules import args as call_args
from cudalint.rules.assignments import TracksAssignments
from cudalint.rules.cud6_mps import callers, dtypes
from cudalint.rules.cud6_mps.placement import Placement, is_off_cpu, placement

if TYPE_CHECKING:
    from cudalint.engine.walk.context import Settings

_DEFAULT_DTYPE_SETTERS = frozenset({"torch.set_default_dtype", "torch.set_default_tensor_type"})
_MAX_HOPS = 6
_MPS = "MPS has no float64 (`TypeError: Cannot convert a MPS Tensor to float64 dtype`)"


_CAST_AFTER_MOVE = (
    "`torch.from_numpy({name})` is moved to a device before it is cast: a float64 array "
    "(numpy's default) fails there on MPS; cast before moving (`.float().to(device)`)"
)
_PASSED = (
    "`{caller}` passes a float64 array (`{argument}`, line {row}) as `{name}`, which "
    "`torch.from_numpy({name})` moves to a device before any cast: MPS has no float64 and "
    "raises there; cast before moving (`.float().to(device)`)"
)
_FROM_NUMPY = (
    "numpy array (float64 by default) moved to a device: MPS has no float64 and raises there; "
    "convert with `.float()` or build the array as float32"
)


# What a function names where a float64 reaches a device (cudalint.rules.cud6_mps.placement):
# a move (`.to(device)`, `.cuda()`, `.type(T)`), a `device=` keyword, a tensor made from one
# on a device (`t.new_zeros(3, dtype=DTYPE)`), or the default dtype's setter (an alias of it
# names it in its import). A float64 a name holds, or a device tensor, reaches no device in a
# function naming none of them: one naming `np` and no move reports nothing.
_REACHING = (
    rf"\.{GAP}(?:to|cuda|type){GAP}\(",
    rf"{word('device')}{GAP}=",
    rf"new_[A-Za-z0-9_]+{GAP}\(",
    word("set_default_dtype"),
    word("set_default_tensor_type"),
)


def _as_value(name: str) -> tuple[tuple[str, ...], ...]:
    """A builtin as a value: assigned (`DTYPE = float`, `dtype = float`), or a positional
    argument where the text calls a method or function that reads one (`.to(d, float)`,
    `.type(float)`, `a.astype(float)`, `torch.set_default_dtype(float)`). Each starts with a
    pattern `re` finds fast (the name, then what ends an argument or a line); `x: float` and
    `float(x)` are no such value."""
    fast = rf"{word(name)}(?=[ \t]*(?:[,);\r\n#\\]|\Z))"
    after = rf"{GAP}(?:\({GAP})*{word(name)}"
    methods = "|".join(word(method) for method in ("to", "type", "astype"))
    calls = rf"(?:\.{GAP}(?:{methods})|{word('set_default_dtype')}){GAP}\("
    return (fast, rf"={after}"), (fast, rf"[(,]{after}", calls)


def _message(suggestion: str) -> str:
    dtype = "complex128" if suggestion.endswith("complex64") else "float64"
    return f"{dtype} tensor on a device: MPS has no {dtype} and raises there; use {suggestion}"


@dataclass(frozen=True)
class _State:
    """What a method chain has made of a tensor so far."""

    site: cst.CSTNode | None = None  # where it became float64
    message: str = ""  # what to say there
    on_device: bool = False
    # `torch.from_numpy(<parameter>)`: an array of a dtype the function cannot tell, which a
    # cast after a move to a device says was not float32
    unknown: cst.Call | None = None


_NOTHING = _State()


class Float64OnDevice(TracksAssignments):
    """
    ## What it does
    Finds float64 and complex128 tensors that reach a device: a `dtype=torch.float64` with a
    `device=`, `.double()` or `.to(torch.float64)` before or after a move to a device,
    `torch.set_default_dtype(torch.float64)` (in a module that uses a device), and
    `torch.from_numpy(...)` of a numpy array that is float64 by default (`np.ones`,
    `np.random.rand`, `np.array([0.5])`, ...) moved to a device, also through a variable
    assigned in the same scope, and arrays joined by `np.stack`, `np.concatenate` (or
    `np.array`) where one of them is float64 (`np.stack([np.random.rand(3) for _ in xs])`).
    An array a method reads from `self` (`torch.from_numpy(self.rew[idx]).to(device)`) is
    float64 where any method of its class assigns it one (`self.rew = np.zeros(n)` in
    `__init__`, even where another method assigns it a float32 array).
    A float64 tensor that stays on the CPU is fine and not reported.
    Indexing (`x[t]`) keeps a tensor's dtype and device. `torch.from_numpy(arr)` of a
    function's parameter moved to a device and cast only then
    (`torch.from_numpy(arr).to(device=t.device)[t].float()`) is a warning: the cast says the
    array is not float32, and a float64 one (numpy's default) fails when moved. Where a call
    of that module-level function in the same module passes a float64 array (kept on `self`,
    `self.betas = np.array(betas, dtype=np.float64)`, and what is derived from it,
    `np.cumprod(1.0 - self.betas)`; made or stacked in the calling function; a module-level
    table), the move is an error, also without a cast after it, and the message names the
    caller. A function moving its parameter that no such call reaches, cast first or never, is
    not reported.

    ## Why is this bad?
    The MPS backend has no float64: moving such a tensor to a Mac GPU raises
    `TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't
    support float64. Please use float32 instead.` complex128 fails in the same way. numpy makes
    float64 arrays unless told otherwise, so `torch.from_numpy(np.random.rand(3)).to(device)`
    is float64 on the device.

    ## Example
    ```python
    x = torch.zeros(3, dtype=torch.float64, device=device)
    y = torch.from_numpy(np.random.rand(3)).to(device)
    ```

    ## Use instead
    ```python
    x = torch.zeros(3, dtype=torch.float32, device=device)
    y = torch.from_numpy(np.random.rand(3)).float().to(device)
    ```
    Keep float64 work on the CPU where the precision is needed.
    """

    code = "CUD601"
    name = "float64-on-device"
    message = _message("torch.float32")
    site_severities = (Severity.WARNING,)

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """The names of float64 in torch (data/float64.toml: `torch.float64`, `.double()`,
        `DoubleTensor`), `astype` (`a.astype("d")`), numpy as a module (not `x.numpy()`:
        numpy's names reach the rule through its imports, or as `numpy.ones`), and Python's
        `float` and `complex` as a value (`dtype = float`, `.to(float)`, `DTYPE = float`; not
        `float(x)` or `x: float`), an alias of `torch.set_default_dtype`, and `from_numpy`
        where the same text moves something (`.to(`, `.cuda(`: of a parameter, cast only
        after its move); not a `from_numpy` that stays on the CPU."""
        return Terms(
            words=frozenset({"float64", "double", "cdouble", "complex128", "DoubleTensor",
                             "astype"}),
            patterns=(rf"{word('numpy')}(?<!\.numpy)", rf"{word('set_default_dtype')}{GAP}as\b"),
            together=(*_as_value("float"), *_as_value("complex"),
                      (word("from_numpy"), _REACHING[0])),
            follow=_REACHING,
        )
    VALID = (
        "import torch\nx = torch.zeros(3, dtype=torch.float64)\n",
        "import torch\nx = torch.zeros(3, dtype=torch.float64, device='cpu')\n",
        "import torch\nx = torch.zeros(3, dtype=torch.float64, device=torch.device('cpu'))\n",
        "import torch\ndev = 'cpu'\nx = torch.ones(2, dtype=torch.double, device=dev)\n",
        "import torch\nx = torch.zeros(3, dtype=torch.float32, device=device)\n",
        "import torch\nx = t.double()\ny = t.to(torch.float64)\n",
        "import torch\nx = t.double().float().to(device)\n",
        "import torch\ny = t.to(device).cpu().double()\n",
        "import torch\nx = t.to(device)\ny = x.cpu().double()\n",
        "import torch\nx = t.double().argmax().to(device)\n",
        "import torch\n\ndef extract(arr, t):\n"
        "    return torch.from_numpy(arr).float().to(device=t.device)[t]\n",
        "import torch\n\ndef extract(arr, t):\n    return torch.from_numpy(arr).to(t.device)[t]\n",
        "import torch\n\ndef extract(arr, t):\n"
        "    return torch.from_numpy(arr)[t].cpu().float()\n",
        "import torch\n\ndef extract(arr, t):\n"
        "    return torch.tensor(arr).to(device=t.device).float()\n",
        "import numpy as np\nimport torch\nt = torch.from_numpy(np.ones(3)).float().to(device)\n",
        "import numpy as np\nimport torch\n"
        "t = torch.from_numpy(np.ones(3, dtype=np.float32)).to(device)\n",
        "import numpy as np\nimport torch\nt = torch.from_numpy(np.array([1, 2])).to(device)\n",
        "import numpy as np\nimport torch\n"
        "a = np.random.rand(3).astype(np.float32)\nt = torch.from_numpy(a).to(device)\n",
        "import numpy as np\nimport torch\nt = torch.from_numpy(np.random.rand(3))\n",
        "import numpy as np\nimport torch\n\ndef collate(xs, device):\n"
        "    arrays = [np.asarray(x, dtype=np.float32) for x in xs]\n"
        "    return torch.tensor(np.stack(arrays)).to(device)\n",
        "import numpy as np\nimport torch\n\ndef collate(xs, device):\n"
        "    return torch.tensor(np.stack(xs)).to(device)\n",
        "import numpy as np\nimport torch\n\n"
        "def _extract(arr, timesteps):\n"
        "    return torch.from_numpy(arr).to(device=timesteps.device)[timesteps]\n\n"
        "class Diffusion:\n    def __init__(self, betas):\n"
        "        self.betas = np.array(betas, dtype=np.float32)\n\n"
        "    def q_sample(self, x, t):\n        return _extract(self.betas, t) * x\n",
        "import numpy as np\nimport torch\n\n"
        "def _extract(arr, timesteps):\n"
        "    return torch.from_numpy(arr).float().to(device=timesteps.device)[timesteps]\n\n"
        "def q_sample(x, t):\n    return _extract(np.linspace(0, 1, 10), t) * x\n",
        "import numpy as np\nimport torch\n\nclass Buffer:\n    def __init__(self, n):\n"
        "        self.rew = np.array([0.0] * n, dtype=np.float32)\n\n"
        "    def get(self, device):\n        return torch.from_numpy(self.rew).to(device)\n",
        "import torch\ntorch.set_default_dtype(torch.float32)\n",
        "import torch\ntorch.set_default_dtype(torch.float64)\nx = torch.linspace(0, 1, 9)\n",
        "import torch\nx = torch.tensor(data, dtype=torch.float64).to('cpu')\n",
        "import torch\nprint('use torch.float64 on device')\n",
        "x = np.double(3.0)\n",
    )
    INVALID = (
        Invalid("import torch\nx = torch.zeros(3, dtype=torch.float64, device=dev)\n"),
        Invalid("import torch as th\nx = th.randn(3, 3, device='cuda', dtype=th.double)\n"),
        Invalid("import torch\nx = torch.ones(2, dtype=torch.complex128, device=device)\n"),
        Invalid("import torch\ny = x.double().to(device)\n"),
        Invalid("import torch\ny = x.to(device).double()\n"),
        Invalid("import torch\ny = x.to(device, torch.float64)\n"),
        Invalid("import torch\ny = x.to(device=d, dtype=torch.float64)\n"),
        Invalid("import torch\ny = x.to(torch.float64).contiguous().cuda()\n"),
        Invalid("import torch\nmodel = Net().double().to(device)\n"),
        Invalid("import torch\ny = torch.tensor(data, dtype=float).to(device)\n"),
        Invalid("import torch\ntorch.set_default_dtype(torch.float64)\nx = x.to(device)\n"),
        Invalid("import torch\ntorch.set_default_tensor_type(torch.DoubleTensor)\nm.cuda()\n"),
        Invalid("import numpy as np\nimport torch\nt = torch.from_numpy(np.ones(3)).to(device)\n"),
        Invalid(
            "import numpy as np\nimport torch\n"
            "def load(device):\n    a = np.random.rand(3)\n"
            "    return torch.from_numpy(a).to(device)\n"
        ),
        Invalid(
            "import numpy as np\nimport torch\n"
            "t = torch.tensor(np.array([0.5, 1.5]), device=device)\n"
        ),
        Invalid(
            "import numpy\nimport torch\n"
            "x = numpy.linspace(0, 1, 50)\ny = 2 * x + 1\n"
            "t = torch.as_tensor(y).to(device, non_blocking=True)\n"
        ),
        Invalid(
            "import numpy as np\nimport torch\nrng = np.random.default_rng(0)\n"
            "t = torch.from_numpy(rng.normal(size=3)).cuda()\n"
        ),
        Invalid("import torch\nw = torch.zeros(3, dtype=torch.float64)\nw = w.to(device)\n"),
        Invalid("import torch\ny = x.to(device).new_zeros(3, dtype=torch.float64)\n"),
        Invalid("import torch\ny = x.to(device).double().cpu()\n"),
        Invalid("import torch\ny = x.double()[idx].to(device)\n"),
        Invalid(
            "import torch\n\n"
            "def _extract_into_tensor(arr, timesteps, broadcast_shape):\n"
            "    res = torch.from_numpy(arr).to(device=timesteps.device)[timesteps].float()\n"
            "    return res.expand(broadcast_shape)\n"
        ),
        Invalid(
            "import torch\nx = t.double()\ny = x.to(device)\nz = x.to(device)\n",
        ),
        Invalid(
            "import numpy as np\nimport torch\n\n"
            "def _extract(arr, timesteps):\n"
            "    return torch.from_numpy(arr).to(device=timesteps.device)[timesteps]\n\n"
            "class Diffusion:\n    def __init__(self, betas):\n"
            "        self.betas = np.array(betas, dtype=np.float64)\n"
            "        self.alphas_cumprod = np.cumprod(1.0 - self.betas)\n\n"
            "    def q_sample(self, x, t):\n"
            "        return _extract(np.sqrt(self.alphas_cumprod), t) * x\n"
        ),
        Invalid(
            "import numpy as np\nimport torch\n\nclass Buffer:\n    def __init__(self, n):\n"
            "        self.rew = np.array([0.0] * n, dtype=np.float64)\n\n"
            "    def get(self, device):\n        return torch.from_numpy(self.rew).to(device)\n"
        ),
        Invalid(
            "import numpy as np\nimport torch\n\ndef collate(samples, device):\n"
            "    arrays = [np.random.rand(3) for _ in samples]\n"
            "    return torch.tensor(np.stack(arrays)).to(device)\n"
        ),
        Invalid(
            "import numpy as np\nimport torch\n"
            "t = torch.from_numpy(np.concatenate([np.ones(3), np.zeros(2)])).to(device)\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self._inside_chain(node):
            return  # the outermost call of the chain follows it
        if self.ctx.call_name(node) in _DEFAULT_DTYPE_SETTERS:
            self._check_default(node)
            return
        state = self._state(node, 0)
        if state.unknown is not None and state.on_device:  # moved, and never cast
            self._passed_float64(state.unknown)

    def _inside_chain(self, node: cst.Call) -> bool:
        parent, grandparent = self.ctx.parent(), self.ctx.parent(2)
        return isinstance(parent, cst.Attribute) and parent.value is node \
            and isinstance(grandparent, cst.Call) and grandparent.func is parent

    def _check_default(self, node: cst.Call) -> None:
        first = call_args.positional(node.args, 0)
        if first is None or not self._uses_devices():
            return
        if dtypes.float64_dtype(self, first.value) or dtypes.float64_tensor_type(self, first.value):
            self.report(node, "float64 as the default dtype puts float64 on the device too: "
                              f"{_MPS}; keep torch.float32 as the default")

    def _uses_devices(self) -> bool:
        """A CPU-only script may well want float64 by default; one that uses a device can't."""
        code = self.ctx.code
        return any(word in code for word in ("device", "cuda", "mps"))

    # -- following a tensor ---------------------------------------------------------------
    def _state(self, expr: cst.BaseExpression, hops: int) -> _State:
        if hops > _MAX_HOPS:
            return _NOTHING
        expr, _ = self.resolve(expr)
        if not isinstance(expr, cst.Call):
            return _NOTHING
        if not self._is_method_call(expr):
            return self._created(expr)
        links: list[cst.Call] = []
        base: cst.BaseExpression = expr
        while isinstance(base, cst.Call) and self._is_method_call(base):
            links.append(base)
            base = base.func.value  # type: ignore[attr-defined]
            while isinstance(base, cst.Subscript):  # `x[t]` keeps the dtype and the device
                base = base.value
        state = self._state(base, hops + 1)
        for call in reversed(links):
            state = self._step(call, state)
            if state is _NOTHING:
                break
        return state

    def _is_method_call(self, call: cst.Call) -> bool:
        if not isinstance(call.func, cst.Attribute):
            return False
        name = self.ctx.call_name(call)
        return name is None or not name.startswith(("torch.", "numpy."))

    def _created(self, call: cst.Call, *, inherited: bool = False) -> _State:
        """A tensor made by a function: `torch.zeros(..., dtype=, device=)`, `from_numpy`;
        `inherited`: `x.new_zeros(...)` of a tensor on the device."""
        dtype = call_args.keyword(call.args, "dtype")
        device = call_args.keyword(call.args, "device")
        on_device = is_off_cpu(self, device.value) if device is not None else inherited
        suggestion = dtypes.float64_dtype(self, dtype.value) if dtype is not None else None
        if suggestion is not None and dtype is not None:
            return self._moved(_State(dtype, _message(suggestion), on_device))
        if dtype is None and self._from_float64_array(call):
            return self._moved(_State(call, _FROM_NUMPY, on_device))
        return _State(on_device=on_device, unknown=self._from_parameter(call))

    def _from_parameter(self, call: cst.Call) -> cst.Call | None:
        """`torch.from_numpy(arr)` of a parameter of the enclosing function, unassigned."""
        if self.ctx.call_name(call) != "torch.from_numpy":
            return None
        data = call_args.positional(call.args, 0)
        if data is None or not isinstance(data.value, cst.Name):
            return None
        name = data.value.value
        function = next((n for n in self.ctx.ancestors() if type(n) is cst.FunctionDef), None)
        if not isinstance(function, cst.FunctionDef) or self.resolve(data.value)[1] is not None:
            return None
        params = function.params
        every = (*params.posonly_params, *params.params, *params.kwonly_params)
        return call if any(param.name.value == name for param in every) else None

    def _cast_after_move(self, state: _State) -> _State:
        """A cast to another dtype: after a move of an array of unknown dtype, too late."""
        if state.unknown is not None and state.on_device \
                and not self._passed_float64(state.unknown):
            data = call_args.positional(state.unknown.args, 0)
            name = self.ctx.module.code_for_node(data.value) if data is not None else "..."
            self.report(state.unknown, _CAST_AFTER_MOVE.format(name=name),
                        severity=Severity.WARNING)
        return _State(on_device=state.on_device)

    def _passed_float64(self, call: cst.Call) -> bool:
        """Report `torch.from_numpy(<parameter>)` moved to a device as it is where a call of
        its module-level function in this module passes a float64 array; whether it did."""
        scopes = [n for n in self.ctx.ancestors() if type(n) in (cst.FunctionDef, cst.ClassDef)]
        function = scopes[0] if len(scopes) == 1 else None  # a module-level function
        data = call_args.positional(call.args, 0)
        if not isinstance(function, cst.FunctionDef) or data is None \
                or not isinstance(data.value, cst.Name):
            return False
        found = callers.float64_callers(self.ctx.code, function.name.value, data.value.value)
        if not found:
            return False
        first = found[0]
        self.report(call, _PASSED.format(caller=first.function, argument=first.argument,
                                         row=first.row, name=data.value.value))
        return True

    def _from_float64_array(self, call: cst.Call) -> bool:
        if self.ctx.call_name(call) not in dtypes.table().from_numpy:
            return False
        data = call_args.positional(call.args, 0)
        return data is not None and (dtypes.float64_array(self, data.value)
                                     or self._float64_on_self(data.value))

    def _float64_on_self(self, expr: cst.BaseExpression) -> bool:
        """An array read from `self` in a method (`self.rew`, `self.rew[idx]`, or a name
        assigned one) that a method of the class assigns a float64 array, wherever it is in
        the module (`callers.float64_in_method`)."""
        scopes = [n for n in self.ctx.ancestors() if type(n) in (cst.FunctionDef, cst.ClassDef)]
        method, owner = scopes if len(scopes) == 2 else (None, None)
        if not isinstance(method, cst.FunctionDef) or not isinstance(owner, cst.ClassDef):
            return False  # a method of a module-level class
        value, _ = self.resolve(expr)
        if not any(isinstance(name, cst.Name) and name.value == "self"
                   for name in find_all(value, (cst.Name,))):
            return False
        return callers.float64_in_method(
            self.ctx.code, owner.name.value, method.name.value,
            self.ctx.module.code_for_node(value))

    def _step(self, call: cst.Call, state: _State) -> _State:
        method = call.func.attr.value  # type: ignore[attr-defined]
        table = dtypes.table()
        if method in table.to_float64:
            attr = call.func.attr  # type: ignore[attr-defined]
            return self._moved(_State(attr, _message("torch.float32"), state.on_device))
        if method in table.to_other:
            return self._cast_after_move(state)
        if method == "cuda":
            return self._moved(_State(state.site, state.message, on_device=True,
                                      unknown=state.unknown))
        if method == "cpu":
            return _State(state.site, state.message, on_device=False)
        if method in ("to", "type"):
            return self._converted(call, state)
        if call_args.keyword(call.args, "dtype") is not None:
            return self._created(call, inherited=method.startswith("new_") and state.on_device)
        return state if method in table.keeping else _NOTHING

    def _converted(self, call: cst.Call, state: _State) -> _State:
        """`.to(device)`, `.to(dtype)`, `.to(device, dtype)`, `.type(torch.float64)`."""
        on_device = state.on_device
        site, message = state.site, state.message
        cast = False
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword in ("non_blocking", "copy", "memory_format"):
                continue
            new = dtypes.float64_dtype(self, arg.value)
            if new is not None or dtypes.float64_tensor_type(self, arg.value):
                site, message = arg, _message(new or "torch.float32")
            elif dtypes.other_dtype(self, arg.value):
                site, cast = None, True
            elif keyword == "device" or keyword is None:
                where = placement(self, arg.value)
                if where is Placement.UNKNOWN and keyword is None:
                    return _NOTHING  # `.to(other_tensor)`, `.to(some_dtype)`: can't tell
                on_device = where is not Placement.CPU
            else:
                return _NOTHING
        if cast:
            self._cast_after_move(state)
            return self._moved(_State(site, message, on_device))
        unknown = state.unknown if site is None else None
        return self._moved(_State(site, message, on_device, unknown))

    def _moved(self, state: _State) -> _State:
        if state.site is not None and state.on_device:
            self.report(state.site, state.message)
        return state

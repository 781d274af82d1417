"""CUD102: `.cuda()` on tensors and modules."""

from __future__ import annotations

import libcst as cst

from cudalint.engine.contract import Invalid, NodeFix, PythonRule
from cudalint.engine.walk.context import PythonContext
from cudalint.finding import Applicability
from cudalint.rules import args as device_args
from cudalint.rules.cud1_device import own_methods
from cudalint.rules.cud1_device.device_strings import cuda_device_expr

_NOT_MOVED = frozenset({"torch", "numba", "cupy", "jax"})


class CudaMethodCall(PythonRule):
    """
    ## What it does
    Finds `.cuda()`, `.cuda(i)` and `.cuda(non_blocking=True)` on tensors and modules. Not
    `self.cuda()` inside a class that is no `nn.Module` and defines its own `cuda` (a
    TensorRT engine wrapper): that calls the project's method.

    ## Why is this bad?
    `.cuda()` moves to an NVIDIA GPU only. On a Mac or a CPU-only machine it raises
    `AssertionError: Torch not compiled with CUDA enabled`.

    ## Example
    ```python
    model = Net().cuda()
    batch = batch.cuda(non_blocking=True)
    ```

    ## Use instead
    ```python
    from cudalint.device import pick_device

    model = Net().to(pick_device())
    batch = batch.to(pick_device(), non_blocking=True)
    ```

    ## Fix safety
    Safe: `pick_device()` returns the current CUDA device wherever CUDA is available, so
    `.to(pick_device())` does what `.cuda()` did there; `.cuda(i)` becomes `pick_device(i)`,
    `.cuda("cuda:1")` becomes `pick_device(1)`, and any other device (a `torch.device`, a
    variable) is passed on, `pick_device(device)`, which returns that very CUDA device where
    CUDA is available. A project that defines its own `cuda` method on a class gets this fix
    as unsafe only, since the receiver may be one of its objects. No fix, safe or unsafe,
    turns a method into a call of itself: `self.cuda()` inside a `def to(self, ...)` (an
    `nn.Module` overriding `to`) keeps its finding without a fix, since `self.to(...)` there
    would recurse forever on CUDA.
    """

    code = "CUD102"
    follows_assignments = False
    name = "cuda-method-call"
    message = "`.cuda()` only works on an NVIDIA GPU"
    keywords = (".cuda(",)
    VALID = (
        "model = model.to(device)",
        "torch.cuda.synchronize()",
        "x = torch.cuda.FloatTensor",
        "print('call model.cuda() first')",
        "cuda = numba.cuda\n",
        "if x.is_cuda:\n    pass\n",
    )
    INVALID = (
        Invalid(
            "model = Net().cuda()\n",
            "from cudalint.device import pick_device\n\nmodel = Net().to(pick_device())\n",
        ),
        Invalid(
            "import torch\nx = torch.ones(3).cuda(1)\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "x = torch.ones(3).to(pick_device(1))\n",
        ),
        Invalid(
            "import torch as th\ndef step(batch):\n    return batch.cuda(non_blocking=True)\n",
            "import torch as th\nfrom cudalint.device import pick_device\n\n"
            "def step(batch):\n    return batch.to(pick_device(), non_blocking=True)\n",
        ),
        Invalid(
            "x = y.cuda(device=rank)\n",
            "from cudalint.device import pick_device\n\nx = y.to(pick_device(rank))\n",
        ),
        Invalid(
            "x = batch.cuda('cuda:1', non_blocking=True)\n",
            "from cudalint.device import pick_device\n\n"
            "x = batch.to(pick_device(1), non_blocking=True)\n",
        ),
        Invalid(
            "def put(t, device):\n    return t.cuda(device)\n",
            "from cudalint.device import pick_device\n\n"
            "def put(t, device):\n    return t.to(pick_device(device))\n",
        ),
        Invalid(
            "h = model.cuda().half().cuda()\n",
            "from cudalint.device import pick_device\n\n"
            "h = model.to(pick_device()).half().to(pick_device())\n",
            count=2,
        ),
        # A parameter named `use_cuda` (or `cuda`, `gpu`) is the caller's switch, on by
        # default here: no guard. A variable holding the probe is one.
        Invalid(
            "def move(x, use_cuda=True):\n    if use_cuda:\n        x = x.cuda()\n    return x\n",
            "from cudalint.device import pick_device\n\ndef move(x, use_cuda=True):\n"
            "    if use_cuda:\n        x = x.to(pick_device())\n    return x\n",
            guarded=False,
        ),
        Invalid(
            "import torch\n\ndef move(x):\n    use_cuda = torch.cuda.is_available()\n"
            "    if use_cuda:\n        x = x.cuda()\n    return x\n",
            "import torch\nfrom cudalint.device import pick_device\n\ndef move(x):\n"
            "    use_cuda = torch.cuda.is_available()\n"
            "    if use_cuda:\n        x = x.to(pick_device())\n    return x\n",
            guarded=True,
        ),
        # A test that exists to check CUDA: guarded, and rewritten only with --unsafe-fixes.
        Invalid(
            "import pytest\nimport torch\n\n\n@pytest.mark.requires_cuda\ndef test_half():\n"
            "    x = torch.ones(4).cuda()\n    assert x.half().sum() == 4\n",
            "import pytest\nimport torch\nfrom cudalint.device import pick_device\n\n\n"
            "@pytest.mark.requires_cuda\ndef test_half():\n"
            "    x = torch.ones(4).to(pick_device())\n    assert x.half().sum() == 4\n",
            unsafe=True,
            path="tests/test_half.py",
            guarded=True,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "cuda":
            return
        if self.ctx.qualname(func.value) in _NOT_MOVED:  # `torch.cuda` is a module
            return
        if own_methods.calls_own_cuda(self.ctx, func.value):
            return  # `self.cuda()` in a class with its own `cuda`: the project's method
        self.report(func.attr, fix=self._fix(node, func))

    def _fix(self, node: cst.Call, func: cst.Attribute) -> NodeFix | None:
        if not self.ctx.helper_available("pick_device") \
                or own_methods.calls_itself(self.ctx, func.value, "to"):
            return None  # `self.cuda()` inside `def to(self)`: `self.to(...)` would recurse
        split = device_args.split_device_argument(node.args, positional=0, keyword="device")
        if split is None:
            return None
        given, rest = split
        device = self.ctx.helper_call("pick_device", _device_arguments(self.ctx, given))
        replacement = node.with_changes(
            func=func.with_changes(attr=cst.Name("to")),
            args=[cst.Arg(device), *device_args.respaced(rest)],
        )
        written = self.ctx.module.code_for_node(device) + (", ..." if rest else "")
        applicability = Applicability.UNSAFE if self.ctx.settings.own_cuda_method \
            else Applicability.SAFE
        return NodeFix(node, replacement, f"Replace with `.to({written})`", applicability,
                       helpers=("pick_device",))


def _device_arguments(ctx: PythonContext, given: cst.BaseExpression | None) -> list[cst.Arg]:
    """What `pick_device` gets for `.cuda(<given>)`: the index of a CUDA device string or
    `torch.device(...)` (`"cuda:1"` -> `1`, never `str(pick_device(1))`), else `given` as it
    is: pick_device takes an index, a device string or a torch.device."""
    if given is None:
        return []
    parsed = cuda_device_expr(ctx, given)
    if parsed is not None:
        return [cst.Arg(parsed.index)] if parsed.index is not None else []
    return [cst.Arg(given)]

"""CUD102: `.cuda()` on tensors and modules."""

from __future__ import annotations

import libcst as cst

from cudalint.rules.base import Invalid, NodeFix, PythonRule
from cudalint.rules.cud1_device import args as device_args

_NOT_MOVED = frozenset({"torch", "numba", "cupy", "jax"})


class CudaMethodCall(PythonRule):
    """
    ## What it does
    Finds `.cuda()`, `.cuda(i)` and `.cuda(non_blocking=True)` on tensors and modules.

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
    `.to(pick_device())` does what `.cuda()` did there; `.cuda(i)` becomes `pick_device(i)`.
    """

    code = "CUD102"
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
            "h = model.cuda().half().cuda()\n",
            "from cudalint.device import pick_device\n\n"
            "h = model.to(pick_device()).half().to(pick_device())\n",
            count=2,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "cuda":
            return
        if self.ctx.qualname(func.value) in _NOT_MOVED:  # `torch.cuda` is a module
            return
        self.report(func.attr, fix=self._fix(node, func))

    def _fix(self, node: cst.Call, func: cst.Attribute) -> NodeFix | None:
        if not self.ctx.helper_available("pick_device"):
            return None
        split = device_args.split_device_argument(node.args, positional=0, keyword="device")
        if split is None:
            return None
        index, rest = split
        device = self.ctx.helper_call("pick_device", [cst.Arg(index)] if index else [])
        replacement = node.with_changes(
            func=func.with_changes(attr=cst.Name("to")),
            args=[cst.Arg(device), *device_args.respaced(rest)],
        )
        return NodeFix(node, replacement, "Replace with `.to(pick_device())`",
                       helpers=("pick_device",))

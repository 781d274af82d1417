"""CUD108: features switched on only when the device is CUDA."""

from __future__ import annotations

import re

import libcst as cst

from cudalint.engine.guards import is_cuda_comparison
from cudalint.finding import Severity
from cudalint.rules.base import Invalid, PythonRule

# What a gate turns off on a Mac when it tests for "cuda": mixed precision, pinning, fused
# optimizers, compilation, half precision.
_FEATURES = re.compile(
    r"\b(autocast|GradScaler|amp|pin_memory|fused|compile|half|bfloat16|float16|"
    r"non_blocking|channels_last|flash)\b"
)
# Places where a comparison's value is used as a setting rather than to pick a branch.
_VALUE_PARENTS = (cst.Assign, cst.AnnAssign, cst.Arg, cst.Return, cst.DictElement,
                  cst.BooleanOperation, cst.UnaryOperation)


class CudaFeatureGate(PythonRule):
    """
    ## What it does
    Finds tests of the device against `"cuda"` (`device == "cuda"`, `device.type == "cuda"`,
    `"cuda" in device`, `device.startswith("cuda")`) that decide a feature: a value passed
    on (`pin_memory=device.type == "cuda"`, `use_amp = "cuda" in device`), or an `if` whose
    branch turns on autocast, a GradScaler, pinned memory, fused optimizers, `torch.compile`
    or half precision. An `if` that only guards CUDA calls (`torch.cuda.synchronize()`) is a
    proper guard and is not reported.

    ## Why is this bad?
    On a Mac the device is `"mps"`, so these features are silently switched off: the code
    runs, but in full precision, unfused or uncompiled, and slower than it could.

    ## Example
    ```python
    use_amp = device.type == "cuda"
    loader = DataLoader(ds, pin_memory=(device == "cuda"))
    ```

    ## Use instead
    ```python
    use_amp = device.type in ("cuda", "mps")
    loader = DataLoader(ds, pin_memory=device.type == "cuda")  # noqa: CUD108 - CUDA only
    ```
    Decide per feature which devices support it.
    """

    code = "CUD108"
    name = "cuda-feature-gate"
    message = "Feature gated on a CUDA device is switched off on MPS"
    severity = Severity.WARNING
    keywords = ("cuda",)
    VALID = (
        "if device.type == 'cuda':\n    torch.cuda.synchronize()\n",
        "is_gpu = device.type in ('cuda', 'mps')\n",
        "print(device == 'cuda')\n",
        "assert x.device.type == 'cuda'\n",
        "if backend == 'nccl':\n    pass\n",
    )
    INVALID = (
        Invalid("use_amp = device.type == 'cuda'\n"),
        Invalid("loader = DataLoader(ds, pin_memory=(device == 'cuda'))\n"),
        Invalid(
            "if 'cuda' in args.device:\n    scaler = torch.cuda.amp.GradScaler()\n"
        ),
        Invalid(
            "opt = torch.optim.AdamW(params, fused=args.device.startswith('cuda'))\n"
        ),
        Invalid("def amp_enabled(device):\n    return device.type == 'cuda'\n"),
    )

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._check(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    def _check(self, node: cst.BaseExpression) -> None:
        if not is_cuda_comparison(node) or self._in_assert():
            return
        parent = self.ctx.parent()
        if isinstance(parent, _VALUE_PARENTS) or (isinstance(parent, cst.IfExp) \
                and parent.test is node):
            if not self._in_message(parent):
                self.report(node)
            return
        if isinstance(parent, cst.If) and parent.test is node \
                and _FEATURES.search(self.ctx.module.code_for_node(parent.body)):
            self.report(node)

    def _in_assert(self) -> bool:
        return any(isinstance(n, cst.Assert) for n in self.ctx.ancestors())

    def _in_message(self, parent: cst.CSTNode) -> bool:
        grandparent = self.ctx.parent(2)
        return isinstance(parent, cst.Arg) and isinstance(grandparent, cst.Call) \
            and isinstance(grandparent.func, cst.Name) and grandparent.func.value == "print"

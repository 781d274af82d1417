"""CUD108: features switched on only when the device is CUDA."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import Invalid, PythonRule
from cudalint.engine.walk.guards import is_cuda_comparison
from cudalint.finding import Severity

if TYPE_CHECKING:
    from cudalint.engine.walk.context import PythonContext

# Places where a test's value is kept or passed on, rather than used to pick a branch.
_VALUE_PARENTS = (cst.Assign, cst.AnnAssign, cst.Arg, cst.Return, cst.DictElement)
# Expressions a test's value passes through on its way to where it is used.
_PASS_THROUGH = (cst.BooleanOperation, cst.UnaryOperation)
# Pinning memory only on CUDA is what CUD603 advises.
_PINNING = re.compile(r"pin", re.IGNORECASE)


class CudaFeatureGate(PythonRule):
    """
    ## What it does
    Finds a device tested against `"cuda"` (`device == "cuda"`, `device_type == "cuda"`,
    `x.device.type == "cuda"`, `"cuda" in args.device`, `device.startswith("cuda")`) whose
    value is kept or passed on as a setting that decides autocast, fused optimizers or
    compilation: `use_amp = device.type == "cuda"`, `enabled=use_amp and device == "cuda"`,
    `return dev.type == "cuda"`, a conditional expression's test. One finding per test.

    Not reported: a test in an `if`, `elif` or `while` (a guard, also as an operand of
    `and`/`or` there), an `assert` (CUD112), a comparison whose other side is not a device
    (`impl == "cuda"` chooses a kernel), and pinned memory gated on CUDA
    (`pin_memory=device.type == "cuda"`, which CUD603 advises).

    ## Why is this bad?
    On a Mac the device is `"mps"`, so these features are silently switched off: the code
    runs, but in full precision, unfused or uncompiled, and slower than it could.

    ## Example
    ```python
    use_amp = device.type == "cuda"
    opt = torch.optim.AdamW(params, fused=device.type == "cuda")
    ```

    ## Use instead
    ```python
    use_amp = device.type in ("cuda", "mps")
    opt = torch.optim.AdamW(params, fused=device.type in ("cuda", "mps"))
    ```
    Decide per feature which devices support it.
    """

    code = "CUD108"
    follows_assignments = False
    name = "cuda-feature-gate"
    message = "Feature gated on a CUDA device is switched off on MPS"
    severity = Severity.WARNING
    words = frozenset({"cuda"})
    VALID = (
        "if device.type == 'cuda':\n    torch.cuda.synchronize()\n",
        "if 'cuda' in args.device:\n    scaler = torch.cuda.amp.GradScaler()\n",
        "if device.type == 'cuda' and use_amp:\n    model = model.half()\n",
        "while device == 'cuda' or device == 'cuda:0':\n    x = x.half()\n",
        "is_gpu = device.type in ('cuda', 'mps')\n",
        "print(device == 'cuda')\n",
        "assert x.device.type == 'cuda'\n",
        "if backend == 'nccl':\n    pass\n",
        "use_fused_kernel = impl == 'cuda'\n",
        "kernel = fast_kernel if impl == 'cuda' else slow_kernel\n",
        "loader = DataLoader(ds, pin_memory=(device == 'cuda'))\n",
        "pin_memory = device.type == 'cuda'\n",
        "stats = {'cuda': device == 'cpu'}\n",
    )
    INVALID = (
        Invalid("use_amp = device.type == 'cuda'\n"),
        Invalid("scaler = torch.amp.GradScaler(enabled=use_amp and device == 'cuda')\n"),
        Invalid("scaler_enabled = dev.type == 'cuda'\n"),
        Invalid(
            "opt = torch.optim.AdamW(params, fused=args.device.startswith('cuda'))\n"
        ),
        Invalid("def amp_enabled(device):\n    return device.type == 'cuda'\n"),
        Invalid("dtype = torch.float16 if x.device.type == 'cuda' else torch.float32\n"),
        Invalid("amp = device == 'cuda' or device == 'cuda:0'\n"),
    )

    def __init__(self, ctx: PythonContext) -> None:
        super().__init__(ctx)
        self._reported: set[int] = set()  # one finding per test expression

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._check(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    def _check(self, node: cst.BaseExpression) -> None:
        if not is_cuda_comparison(node):
            return
        whole, user = self._use_of(node)
        if user is None or id(whole) in self._reported or not self._keeps(whole, user):
            return
        self._reported.add(id(whole))
        self.report(node)

    def _use_of(self, node: cst.BaseExpression) -> tuple[cst.CSTNode, cst.CSTNode | None]:
        """The whole test `node` is part of (through and/or/not) and what uses it."""
        whole: cst.CSTNode = node
        for ancestor in self.ctx.ancestors():
            if not isinstance(ancestor, _PASS_THROUGH):
                return whole, ancestor
            whole = ancestor
        return whole, None

    def _keeps(self, whole: cst.CSTNode, user: cst.CSTNode) -> bool:
        """The test's value is kept or passed on as a setting, not pinning, not a message."""
        if isinstance(user, cst.IfExp):
            return user.test is whole
        if not isinstance(user, _VALUE_PARENTS):
            return False  # if/elif/while tests are guards; assert is CUD112
        if isinstance(user, cst.Arg):
            return not self._in_message() and not _pins(user.keyword)
        if isinstance(user, cst.Assign):
            return not any(_pins(t.target) for t in user.targets)
        if isinstance(user, cst.AnnAssign):
            return not _pins(user.target)
        if isinstance(user, cst.DictElement):
            return not _pins(user.key)
        return True

    def _in_message(self) -> bool:
        call = next((a for a in self.ctx.ancestors() if isinstance(a, cst.Call)), None)
        return call is not None and isinstance(call.func, cst.Name) \
            and call.func.value == "print"


def _pins(target: cst.BaseExpression | None) -> bool:
    """`pin_memory=`, `pin = ...`, `self.pin_memory = ...`, `{"pin_memory": ...}`."""
    if isinstance(target, cst.Attribute):
        target = target.attr
    if isinstance(target, cst.Name):
        return bool(_PINNING.search(target.value))
    if isinstance(target, cst.SimpleString) and isinstance(target.evaluated_value, str):
        return bool(_PINNING.search(target.evaluated_value))
    return False

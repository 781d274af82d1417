"""CUD107: CUDA backend flags, which do nothing on MPS or CPU."""

from __future__ import annotations

import libcst as cst

from cudalint.engine.contract import Invalid, PythonRule
from cudalint.finding import Severity
from cudalint.rules.cud1_device import cuda_api_table

_ROOTS = ("torch.backends.cudnn.", "torch.backends.cuda.")


class CudaBackendFlag(PythonRule):
    """
    ## What it does
    Finds settings of the CUDA backends: assignments to `torch.backends.cudnn.benchmark`,
    `deterministic`, `enabled`, `allow_tf32` (any `torch.backends.cudnn.*` or
    `torch.backends.cuda.*` attribute, such as `torch.backends.cuda.matmul.allow_tf32`), and
    the calls that switch CUDA kernels (`torch.backends.cuda.enable_flash_sdp(...)`,
    `sdp_kernel(...)`, `torch.backends.cudnn.flags(...)`). Reading a flag and the probes
    (`torch.backends.cudnn.is_available()`) are not reported.

    ## Why is this bad?
    Nothing breaks, but the intent is lost off CUDA: `cudnn.deterministic = True` does not make
    an MPS run deterministic, and `allow_tf32` says nothing to other backends.

    ## Example
    ```python
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = True
    ```

    ## Use instead
    ```python
    torch.use_deterministic_algorithms(True)
    torch.set_float32_matmul_precision("high")
    ```
    """

    code = "CUD107"
    follows_assignments = False
    name = "cuda-backend-flag"
    message = "CUDA backend flag"
    severity = Severity.INFO
    # a setting's `torch.backends.cudnn` or `.cuda` (or an import's alias of it) names the
    # module as a whole identifier: not `use_cudnn`, `torch._C._get_cudnn_enabled()`
    words = frozenset({"cuda", "cudnn"})
    VALID = (
        "if torch.backends.cudnn.is_available():\n    pass\n",
        "old = torch.backends.cudnn.benchmark\n",
        "torch.use_deterministic_algorithms(True)\n",
        'print("set torch.backends.cudnn.benchmark = True")\n',
        "torch.backends.mps.is_available()\n",
        "ok = torch.backends.cuda.flash_sdp_enabled()\n",
        "# torch.backends.cudnn.benchmark = True\nx = 1\n",
    )
    INVALID = (
        Invalid("import torch\ntorch.backends.cudnn.benchmark = True\n"),
        Invalid("import torch\ntorch.backends.cudnn.deterministic = True\n"
                "torch.backends.cudnn.benchmark = False\n", count=2),
        Invalid("from torch.backends import cudnn\ncudnn.benchmark = cudnn.enabled = True\n",
                count=2),
        Invalid("import torch\ntorch.backends.cuda.matmul.allow_tf32 = args.tf32\n"),
        Invalid("import torch\ntorch.backends.cuda.enable_flash_sdp(False)\n"),
        Invalid("import torch\nwith torch.backends.cudnn.flags(enabled=False):\n    pass\n"),
        Invalid("import torch\nif torch.cuda.is_available():\n"
                "    torch.backends.cudnn.benchmark = True\n"),
    )

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._check_target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check_target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_target(node.target)

    def visit_Call(self, node: cst.Call) -> None:
        name = self.ctx.call_name(node)
        if name is None or not name.startswith(_ROOTS):
            return
        api = cuda_api_table.lookup(name)
        # Only the calls the table names: the rest of the modules are reads and probes.
        if api is None or api.code != self.code or api.name != cuda_api_table.canonical(name):
            return
        self.report(node, api.message_for(name), severity=api.severity)

    def _check_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._check_target(element.value)
            return
        name = self.ctx.qualname(target) if isinstance(target, cst.Attribute) else None
        if name is None or not name.startswith(_ROOTS):
            return
        api = cuda_api_table.lookup(name)
        if api is not None and api.code == self.code:
            self.report(target, api.message_for(name), severity=api.severity)

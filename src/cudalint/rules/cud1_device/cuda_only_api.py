"""CUD110: CUDA-only torch APIs with no portable equivalent."""

from __future__ import annotations

import libcst as cst

from cudalint.engine.contract import Invalid
from cudalint.finding import Severity
from cudalint.rules.cud1_device.references import ApiUse, ApiUseRule

# Calls that only show a value: passing `torch.version.cuda` to them never fails.
_SHOWING_CALLS = frozenset(
    {"print", "str", "repr", "format", "debug", "info", "warning", "warn", "error", "log",
     "write", "echo"}
)


class CudaOnlyApi(ApiUseRule):
    """
    ## What it does
    Finds torch APIs that exist only for CUDA and have no portable replacement: CUDA graphs
    (`torch.cuda.CUDAGraph`, `torch.cuda.graph`, `make_graphed_callables`), streams
    (`current_stream`, `Stream`), capability gates (`get_device_capability`,
    `get_device_properties`, `is_bf16_supported`), `mem_get_info`, NVTX ranges,
    `torch.version.cuda` where its value is used, `ProfilerActivity.CUDA`, NVML queries, and any
    other `torch.cuda.<name>` that has no portable function in the helper (info). The severity
    says what happens on a Mac: error where the call raises, warning where it quietly gives a
    different answer (`is_bf16_supported()` is False, `torch.version.cuda` is None), info
    where it does nothing. `torch.cuda.is_available()` and the exception classes are never
    reported; `torch.version.cuda` is not reported where it is only tested
    (`if torch.version.cuda:`, `is None`) or printed.

    ## Why is this bad?
    `torch.cuda.get_device_capability()` raises `AssertionError: Torch not compiled with CUDA
    enabled` on a Mac, CUDA graphs and streams cannot be created there, and
    `torch.cuda.is_bf16_supported()` turns bfloat16 off on Apple GPUs that support it.

    ## Example
    ```python
    if torch.cuda.get_device_capability()[0] >= 8:
        attention = flash_attention
    ```

    ## Use instead
    ```python
    if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8:
        attention = flash_attention
    else:
        attention = F.scaled_dot_product_attention
    ```
    """

    code = "CUD110"
    name = "cuda-only-api"
    message = "CUDA-only torch API"
    severity = Severity.ERROR
    site_severities = (Severity.WARNING, Severity.INFO)
    # `torch.cuda.<name>`, `torch.version.cuda`, `ProfilerActivity.CUDA`: not `dtypesIfCUDA`
    words = frozenset({"cuda", "CUDA"})
    VALID = (
        "ok = torch.cuda.is_available()\n",
        "try:\n    run()\nexcept torch.cuda.OutOfMemoryError:\n    pass\n",
        "torch.cuda.synchronize()\n",
        "if torch.version.cuda:\n    pass\n",
        "if torch.version.cuda is not None:\n    pass\n",
        'print(f"CUDA {torch.version.cuda}")\n',
        "logger.info('cuda %s', torch.version.cuda)\n",
        "import torch\nwith torch.cuda.amp.autocast():\n    pass\n",
        "x = torch.cuda.FloatTensor(3)\n",
        'print("torch.cuda.get_device_capability() is (8, 0)")\n',
        "cuda = torch.cuda\n",
        "torch.mps.synchronize()\n",
    )
    INVALID = (
        Invalid("import torch\nif torch.cuda.get_device_capability()[0] >= 8:\n    pass\n"),
        Invalid("import torch\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    pass\n",
                count=2),
        Invalid("import torch\nmajor = int(torch.version.cuda.split('.')[0])\n"),
        Invalid("from torch.profiler import ProfilerActivity, profile\n"
                "with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):\n"
                "    pass\n"),
        Invalid("import torch\ndtype = torch.bfloat16 if torch.cuda.is_bf16_supported() "
                "else torch.float16\n"),
        Invalid("import torch.cuda.nvtx as nvtx\nnvtx.range_push('forward')\n"),
        Invalid("import torch\ns = torch.cuda.Stream()\n"),
        Invalid("from torch import cuda\nfree, total = cuda.mem_get_info()\n"),
        Invalid("import torch\ntorch.cuda.some_future_api()\n"),
        Invalid("import torch\ncap = torch.cuda.is_available() and "
                "torch.cuda.get_device_capability()\n"),
    )

    def check_use(self, use: ApiUse) -> None:
        if use.api.code != self.code:
            return
        if use.api.off_cuda == "returns-none" and self._only_tested_or_shown():
            return
        self.report(use.call or use.node, use.api.message_for(use.name), severity=use.api.severity)

    def _only_tested_or_shown(self) -> bool:
        """The value is only tested (`if torch.version.cuda:`, `is None`, `==`) or shown
        (printed, logged, formatted): None does no harm there."""
        child = self.ctx.stack[-1]
        for node in self.ctx.ancestors():
            if isinstance(node, (cst.BooleanOperation, cst.UnaryOperation)):
                child = node
                continue
            if isinstance(node, cst.Comparison):
                return all(isinstance(t.operator, (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual))
                           for t in node.comparisons)
            if isinstance(node, (cst.If, cst.While, cst.IfExp, cst.Assert)):
                return node.test is child
            if isinstance(node, cst.FormattedStringExpression):
                return True
            if isinstance(node, cst.Arg):
                child = node
                continue
            if isinstance(node, cst.Call):
                return child is not node.func and _call_leaf(node) in _SHOWING_CALLS
            return False
        return False


def _call_leaf(call: cst.Call) -> str | None:
    if isinstance(call.func, cst.Name):
        return call.func.value
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None

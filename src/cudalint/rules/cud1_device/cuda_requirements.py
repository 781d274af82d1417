"""CUD112: code that refuses to run without CUDA."""

from __future__ import annotations

import libcst as cst

from cudalint.engine.guards import is_cuda_probe
from cudalint.rules.base import Invalid, PythonRule


def _refuses(body: cst.BaseSuite) -> bool:
    """The block raises or exits straight away."""
    if isinstance(body, cst.SimpleStatementSuite):
        statements = list(body.body)
    elif isinstance(body, cst.IndentedBlock) and body.body:
        first = body.body[0]
        statements = list(first.body) if isinstance(first, cst.SimpleStatementLine) else []
    else:
        return False
    for statement in statements:
        if isinstance(statement, cst.Raise):
            return True
        call = statement.value if isinstance(statement, cst.Expr) else None
        if isinstance(call, cst.Call) and isinstance(call.func, (cst.Name, cst.Attribute)):
            leaf = call.func.value if isinstance(call.func, cst.Name) else call.func.attr.value
            if leaf == "exit":
                return True
    return False


class CudaRequired(PythonRule):
    """
    ## What it does
    Finds hard CUDA requirements: `assert x.is_cuda`, `assert torch.cuda.is_available()`,
    `assert x.device.type == "cuda"`, and `if not x.is_cuda: raise ...` /
    `if not torch.cuda.is_available(): sys.exit(...)`.

    ## Why is this bad?
    The program stops on a Mac or a CPU-only machine even where the code after the check
    would run there.

    ## Example
    ```python
    assert torch.cuda.is_available(), "a GPU is required"
    ```

    ## Use instead
    Check for any accelerator, or none: `pick_device()` from the helper picks CUDA, then MPS,
    then the CPU. Keep a CUDA requirement only where a CUDA-only kernel follows.
    """

    code = "CUD112"
    name = "cuda-required"
    message = "Hard CUDA requirement stops the program on a Mac"
    keywords = ("cuda",)
    VALID = (
        "if not torch.cuda.is_available():\n    device = 'cpu'\n",
        "assert x.device == y.device\n",
        "if x.is_cuda:\n    raise ValueError('move it to the cpu')\n",
        "use_cuda = torch.cuda.is_available()\n",
    )
    INVALID = (
        Invalid("assert torch.cuda.is_available(), 'needs a GPU'\n"),
        Invalid("def f(x):\n    assert x.is_cuda\n"),
        Invalid("assert logits.device.type == 'cuda'\n"),
        Invalid("if not x.is_cuda:\n    raise ValueError('expected a CUDA tensor')\n"),
        Invalid("import sys, torch\nif not torch.cuda.is_available():\n    sys.exit('GPU only')\n"),
        Invalid("if not torch.cuda.is_available(): raise SystemExit(1)\n"),
    )

    def visit_Assert(self, node: cst.Assert) -> None:
        if is_cuda_probe(self.ctx, node.test):
            self.report(node)

    def visit_If(self, node: cst.If) -> None:
        test = node.test
        if not (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)):
            return
        if is_cuda_probe(self.ctx, test.expression) and _refuses(node.body):
            self.report(node)

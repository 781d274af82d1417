"""CUD112: code that refuses to run without CUDA."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import Invalid, PythonRule
from cudalint.engine.first_pass.prefilter import PROBE_PATTERN, Terms
from cudalint.engine.walk.guards import (
    is_cuda_absence,
    is_cuda_probe,
    last_statement,
    stops_program,
)

if TYPE_CHECKING:
    from cudalint.engine.walk.context import Settings


class CudaRequired(PythonRule):
    """
    ## What it does
    Finds hard CUDA requirements: `assert x.is_cuda`, `assert torch.cuda.is_available()`,
    `assert x.device.type == "cuda"`, and a branch without CUDA that ends with `raise`,
    `sys.exit(...)`, `exit()`, `quit()` or `os._exit(...)`: `if not x.is_cuda: raise ...`,
    `if not torch.cuda.is_available(): sys.exit(...)`, or the `else:` of
    `if torch.cuda.is_available():` printing "does not support training without GPU" and
    exiting. A test that skips (`pytest.skip`) or returns is not a requirement.

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
    words = frozenset({"cuda"})
    VALID = (
        "if not torch.cuda.is_available():\n    device = 'cpu'\n",
        "assert x.device == y.device\n",
        "if x.is_cuda:\n    raise ValueError('move it to the cpu')\n",
        "use_cuda = torch.cuda.is_available()\n",
        "import pytest\nif not torch.cuda.is_available():\n    pytest.skip('needs CUDA')\n",
        "def f(x):\n    if not torch.cuda.is_available():\n        return x\n",
        "if args.cuda:\n    train()\nelse:\n    sys.exit('run with --cuda')\n",
    )
    INVALID = (
        Invalid("assert torch.cuda.is_available(), 'needs a GPU'\n"),
        Invalid("def f(x):\n    assert x.is_cuda\n"),
        Invalid("assert logits.device.type == 'cuda'\n"),
        Invalid("if not x.is_cuda:\n    raise ValueError('expected a CUDA tensor')\n"),
        Invalid("import sys, torch\nif not torch.cuda.is_available():\n    sys.exit('GPU only')\n"),
        Invalid("if not torch.cuda.is_available(): raise SystemExit(1)\n"),
        Invalid(
            "import sys\nimport torch\n\ndef main(args):\n    if torch.cuda.is_available():\n"
            "        train(args)\n    else:\n"
            "        print('This code does not support training without GPU')\n"
            "        sys.exit(1)\n"
        ),
        Invalid("if not torch.cuda.is_available():\n    print('GPU required')\n    exit()\n"),
        Invalid("import os\nif not torch.cuda.is_available():\n    os._exit(1)\n"),
        Invalid("if not torch.cuda.is_available():\n    quit()\n"),
    )

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """A requirement tests a probe (`guards.is_cuda_probe`): `torch.cuda`'s, a flag in any
        case (`USE_CUDA`, `cuda_available`), `x.is_cuda`, or a device against `"cuda"`."""
        return Terms(words=cls.words, patterns=(PROBE_PATTERN,))

    def visit_Assert(self, node: cst.Assert) -> None:
        if is_cuda_probe(self.ctx, node.test):
            self.report(node)

    def visit_If(self, node: cst.If) -> None:
        if self._refuses(node):
            self.report(node)

    def _refuses(self, node: cst.If) -> bool:
        if is_cuda_absence(self.ctx, node.test):
            return self._stops(node.body)
        orelse = node.orelse
        return isinstance(orelse, cst.Else) and is_cuda_probe(self.ctx, node.test) \
            and self._stops(orelse.body)

    def _stops(self, body: cst.BaseSuite) -> bool:
        return stops_program(self.ctx, last_statement(body))

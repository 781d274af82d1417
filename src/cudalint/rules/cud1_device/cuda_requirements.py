"""CUD112: code that refuses to run without CUDA."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import Invalid, PythonRule
from cudalint.engine.first_pass.prefilter import PROBE_PATTERN, Terms
from cudalint.engine.walk.guards import (
    is_cuda_absence,
    is_cuda_probe,
    is_cuda_string,
    is_device,
    last_statement,
    stops_program,
)

if TYPE_CHECKING:
    from cudalint.engine.walk.context import Settings


class CudaRequired(PythonRule):
    """
    ## What it does
    Finds hard CUDA requirements: `assert x.is_cuda` (also `assert(x.is_cuda == True)`,
    `assert x.is_cuda is True`), `assert torch.cuda.is_available()`,
    `assert x.device.type == "cuda"`, and a branch without CUDA that ends with `raise`,
    `sys.exit(...)`, `exit()`, `quit()` or `os._exit(...)`: `if not x.is_cuda: raise ...`
    (also `x.is_cuda == False`, `is False`), `if not torch.cuda.is_available(): sys.exit(...)`,
    an `elif`/`else` that raises where the other branch is the CUDA one
    (`if x.is_cuda: ... elif x.is_cuda == False: raise NotImplementedError()`), or the `else:`
    of `if torch.cuda.is_available():` printing "does not support training without GPU" and
    exiting. A test that skips (`pytest.skip`) or returns is not a requirement, nor is a
    dispatch over several device types whose `else` rejects unknown ones
    (`if d.type == "cpu": ... elif d.type == "cuda": ... else: raise ValueError(d)`), nor an
    `assert x.is_cuda` in a test that only runs with CUDA (`@pytest.mark.requires_cuda`,
    `@pytest.mark.skipif(not torch.cuda.is_available(), ...)`): it checks the result there.

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
        "def forward(x):\n    if x.device.type == 'cpu':\n        return cpu_impl(x)\n"
        "    elif x.device.type == 'cuda':\n        return cuda_impl(x)\n    else:\n"
        "        raise ValueError(f'unsupported device {x.device}')\n",
        "def forward(x, device):\n    if device in ('cpu', 'mps'):\n        return ref(x)\n"
        "    elif device == 'cuda':\n        return fused(x)\n    else:\n"
        "        raise NotImplementedError(device)\n",
        "def check(x):\n    assert x.is_cuda == False, 'expects a CPU tensor'\n",
        "def f(x):\n    if x.is_cuda is True:\n        return fused(x)\n    return ref(x)\n",
        "import pytest\n\n@pytest.mark.requires_cuda\ndef test_half():\n"
        "    y = model(x).half()\n    assert y.is_cuda\n",
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
        Invalid("def forward(x):\n    assert(x.is_cuda == True)\n    return kernel(x)\n",
                guarded=False),
        Invalid("def forward(x):\n    assert x.is_cuda is True, 'CUDA only'\n", guarded=False),
        Invalid(
            "def forward(ctx, x):\n    if x.is_cuda:\n        return _ext.forward(x)\n"
            "    elif x.is_cuda == False:\n        raise NotImplementedError()\n",
            guarded=False,
        ),
        Invalid("if torch.cuda.is_available() == False:\n    sys.exit('needs a GPU')\n"),
        Invalid(
            "def forward(x, device):\n    if device.type == 'cuda':\n        return fused(x)\n"
            "    else:\n        raise ValueError('only CUDA is supported')\n",
            guarded=False,
        ),
    )

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """A requirement tests a probe (`guards.is_cuda_probe`): `torch.cuda`'s, a flag in any
        case (`USE_CUDA`, `cuda_available`), `x.is_cuda`, or a device against `"cuda"`."""
        return Terms(words=cls.words, patterns=(PROBE_PATTERN,))

    def visit_Assert(self, node: cst.Assert) -> None:
        if is_cuda_probe(self.ctx, node.test, switches=True) and not self.ctx.in_cuda_test():
            self.report(node)

    def visit_If(self, node: cst.If) -> None:
        if self._refuses(node) and not self._dispatches(node) and not self.ctx.in_cuda_test():
            self.report(node)

    def _dispatches(self, node: cst.If) -> bool:
        """An `if`/`elif` chain over device types (`d.type == "cpu"`, then `"cuda"`), whose
        last `else` rejects the types it does not know: not a CUDA requirement."""
        chain: list[cst.If] = [node]
        for ancestor in self.ctx.ancestors():
            if not (isinstance(ancestor, cst.If) and ancestor.orelse is chain[-1]):
                break
            chain.append(ancestor)
        orelse = node.orelse
        while isinstance(orelse, cst.If):
            chain.append(orelse)
            orelse = orelse.orelse
        return any(_tests_other_device(link.test) for link in chain)

    def _refuses(self, node: cst.If) -> bool:
        if is_cuda_absence(self.ctx, node.test, switches=True):
            return self._stops(node.body)
        orelse = node.orelse
        return isinstance(orelse, cst.Else) and is_cuda_probe(self.ctx, node.test, switches=True) \
            and self._stops(orelse.body)

    def _stops(self, body: cst.BaseSuite) -> bool:
        return stops_program(self.ctx, last_statement(body))


def _tests_other_device(test: cst.BaseExpression) -> bool:
    """`d.type == "cpu"`, `device in ("cpu", "mps")`, `x.is_cpu`: a test for a device that is
    not CUDA."""
    if isinstance(test, cst.BooleanOperation):
        return _tests_other_device(test.left) or _tests_other_device(test.right)
    if isinstance(test, cst.Attribute):
        return test.attr.value in ("is_cpu", "is_mps", "is_xpu", "is_meta")
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    if not isinstance(target.operator, (cst.Equal, cst.In)):
        return False
    left, right = test.left, target.comparator
    if not (is_device(left) or is_device(right)):
        return False
    strings = [side for side in (left, right) if isinstance(side, cst.SimpleString)]
    if isinstance(right, (cst.Tuple, cst.List, cst.Set)):
        strings += [e.value for e in right.elements if isinstance(e.value, cst.SimpleString)]
    return any(isinstance(s, cst.SimpleString) and isinstance(s.evaluated_value, str)
               and not is_cuda_string(s) for s in strings)

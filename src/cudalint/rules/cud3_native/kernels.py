"""CUD303: GPU kernels written inline in Python (the table in data/gpu_kernels.toml)."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import Invalid, PythonRule
from cudalint.engine.first_pass.prefilter import GAP, Terms, word
from cudalint.rules import arguments, availability, tables

if TYPE_CHECKING:
    from cudalint.engine.walk.context import Settings


@dataclass(frozen=True)
class _Kernel:
    library: str
    calls: tuple[str, ...]
    alternative: str
    keyword: str | None = None
    values: tuple[str, ...] = ()

    def matches(self, qualified: str, call: cst.Call | None) -> bool:
        if not any(fnmatch.fnmatchcase(qualified, pattern) for pattern in self.calls):
            return False
        if self.keyword is None:
            return True
        value = arguments.string_value(
            arguments.argument(call, None, self.keyword) if call else None)
        return value is not None and value.lower() in self.values


@cache
def _kernels() -> tuple[_Kernel, ...]:
    return tuple(
        _Kernel(e["library"], tuple(e["calls"]), e["alternative"], e.get("keyword"),
                tuple(e.get("values", ())))
        for e in tables.load("gpu_kernels.toml")["kernel"]
    )


@cache
def _any_kernel() -> re.Pattern[str]:
    """Matches the names some kernel's `calls` match: most calls are none, and asking each
    pattern of each kernel about every call cost a tenth of the rules' walk."""
    return re.compile("|".join(fnmatch.translate(c) for k in _kernels() for c in k.calls))


def _terms() -> Terms:
    """Per kernel API `root.….leaf`, its root and its leaf in one text (`triton` and `jit`:
    not `torch.jit`), and the imports that bind a name for one of its modules
    (`import triton as tr`, `from numba import cuda`: the functions naming that name and a
    leaf are read); torch's own entries by their own names (`triton_op`, `jiterator`)."""
    words: set[str] = set()
    leaves: dict[str, set[str]] = {}
    modules: set[tuple[str, ...]] = set()
    for kernel in _kernels():
        for call in kernel.calls:
            parts = tuple(part for part in call.split(".") if "*" not in part)
            if parts[0] == "torch":
                words.add(parts[-1])
                continue
            leaves.setdefault(parts[0], set()).add(parts[-1])
            modules.update(parts[:end] for end in range(1, len(parts)))
    together = tuple((word(root), "|".join(word(leaf) for leaf in sorted(named)))
                     for root, named in sorted(leaves.items()))
    dotted = [rf"{GAP}\.{GAP}".join(word(part) for part in module) for module in sorted(modules)]
    patterns = (*(rf"{module}{GAP}as\b" for module in dotted),
                *(rf"{word('from')}{GAP}{module}{GAP}import\b" for module in dotted))
    # A kernel is reached through its leaf, or an alias whose import names it: a function
    # naming only what `from triton import Config` binds compiles none.
    follow = tuple(word(leaf) for leaf in sorted(words | {leaf for named in leaves.values()
                                                         for leaf in named}))
    return Terms(words=frozenset(words), patterns=patterns, together=together, follow=follow)


class InlineGpuKernel(PythonRule):
    """
    ## What it does
    Finds GPU kernels compiled from Python: cupy's `RawKernel`, `RawModule`,
    `ElementwiseKernel`, `ReductionKernel` and `cupy.fuse`; numba's `@cuda.jit` (any alias)
    and `vectorize(target="cuda")`; pycuda's `SourceModule`; triton's `@triton.jit`,
    `@triton.autotune` and `@triton.heuristics`; `torch.cuda.jiterator`. A function with
    several such decorators (`@triton.autotune` over `@triton.jit`) is one kernel and one
    finding, at its first decorator. The message names `torch.mps.compile_shader`, PyTorch's
    way to run a Metal kernel on a Mac.

    Kernel source in a docstring or a comment, `@numba.njit`, `@torch.compile` and triton
    helpers such as `triton.cdiv` are not reported.

    ## Why is this bad?
    The kernel is CUDA C++ or PTX, compiled at run time by NVRTC or the triton compiler for an
    NVIDIA GPU. Nothing compiles it on a Mac: the code has to be ported.

    ## Example
    ```python
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        ...
    ```

    ## Use instead
    Keep an eager PyTorch path beside the kernel (`out = x + y`), and on a Mac port hot
    kernels to Metal:
    ```python
    lib = torch.mps.compile_shader(METAL_SOURCE)
    lib.add_kernel(out, x, y)
    ```
    """

    code = "CUD303"
    follows_assignments = False
    name = "inline-gpu-kernel"
    message = "a GPU kernel compiled for CUDA"

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        return _terms()

    VALID = (
        "import numba\n@numba.njit(parallel=True)\ndef f(x):\n    return x\n",
        "import triton\ngrid = (triton.cdiv(n, 128),)\n",
        '"""A cupy.RawKernel version lives in kernels.py."""\n# @triton.jit\n',
        "import torch\n@torch.compile\ndef f(x):\n    return x * 2\n",
        "from numba import vectorize\n@vectorize(['float32(float32)'], target='parallel')\n"
        "def f(x):\n    return x\n",
        "import cupy as cp\nx = cp.asarray([1, 2])\n",
    )
    INVALID = (
        Invalid("import cupy as cp\nk = cp.RawKernel(SRC, 'add')\n"),
        Invalid("import cupy\nsq = cupy.ElementwiseKernel('T x', 'T y', 'y = x * x', 'sq')\n"),
        Invalid("from numba import cuda\n@cuda.jit\ndef k(a):\n    a[cuda.grid(1)] += 1\n"),
        Invalid("import numba.cuda\n@numba.cuda.jit(device=True)\ndef k(a):\n    return a\n"),
        Invalid("from numba import cuda\nk = cuda.jit('void(float32[:])')(f)\n"),
        Invalid("from numba import vectorize\n@vectorize(['float32(float32)'], target='cuda')\n"
                "def f(x):\n    return x\n"),
        Invalid("from pycuda.compiler import SourceModule\nmod = SourceModule(SRC)\n"),
        Invalid("import triton\n@triton.autotune(configs=[], key=['n'])\n@triton.jit\n"
                "def k(x_ptr, n):\n    pass\n"),
        Invalid("import triton as tr\n@tr.heuristics({'EVEN': lambda a: a['n'] % 2 == 0})\n"
                "@tr.jit\ndef k(x_ptr, n):\n    pass\n"),
        Invalid("from torch.cuda import jiterator\nf = jiterator._create_jit_fn(CODE)\n"),
        Invalid("import torch\nf = torch.cuda.jiterator._create_jit_fn(CODE)\n"),
    )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            expression = decorator.decorator
            call = expression if isinstance(expression, cst.Call) else None
            func = call.func if call else expression
            kernel = self._kernel(func, call)
            if kernel is not None:
                self._report(expression, kernel, f"@{self.ctx.qualname(func)}")
                return

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(self.ctx.parent(), cst.Decorator):
            return  # reported once per function, at its first kernel decorator
        kernel = self._kernel(node.func, node)
        if kernel is not None:
            self._report(node, kernel, f"{self.ctx.call_name(node)}(...)")

    def _kernel(self, func: cst.BaseExpression, call: cst.Call | None) -> _Kernel | None:
        qualified = self.ctx.qualname(func)
        if qualified is None or not _any_kernel().match(qualified):
            return None
        return next((k for k in _kernels() if k.matches(qualified, call)), None)

    def _report(self, node: cst.CSTNode, kernel: _Kernel, subject: str) -> None:
        message = (f"`{subject}` compiles a CUDA kernel, which runs only on NVIDIA GPUs: use "
                   f"{kernel.alternative} off CUDA, or port it to Metal with "
                   "`torch.mps.compile_shader`")
        words = availability.library_words([kernel.library])
        guarded = self.ctx.is_guarded() or availability.under_check(self.ctx, words)
        self.report(node, message, guarded=guarded)

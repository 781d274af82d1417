"""CUD302: CUDA source files (`.cu`, `.cuh`) in the tree."""

from __future__ import annotations

from collections.abc import Iterator

from cudalint.engine.contract import FileRule, Invalid, Valid
from cudalint.finding import Finding
from cudalint.kinds import FileKind, SourceFile


class CudaSourceFile(FileRule):
    """
    ## What it does
    Reports every CUDA source file (`.cu`, `.cuh`) in the tree, once, at its first line.

    ## Why is this bad?
    CUDA C++ is compiled by `nvcc` for NVIDIA GPUs only. On a Mac there is no `nvcc` and no
    CUDA device, so whatever these kernels do has no implementation there. Severity: error
    (a blocker: no automatic fix exists).

    ## Example
    ```text
    csrc/attention_kernel.cu
    csrc/attention_kernel.cuh
    ```

    ## Use instead
    A pure-PyTorch implementation of the op (often fast enough with `torch.compile`), or a
    Metal kernel through `torch.mps.compile_shader`, chosen when CUDA is not available. To
    acknowledge the files, exclude them (`extend-exclude = ["csrc/*.cu"]`) or ignore the code
    for them (`per-file-ignores = {"csrc/*" = ["CUD302"]}`): a binary-free `.cu` file has no
    comment syntax cudalint reads.
    """

    code = "CUD302"
    name = "cuda-source-file"
    message = ("CUDA source file: compiled by nvcc for NVIDIA GPUs only; keep a PyTorch (or "
               "`torch.mps.compile_shader`) implementation for other devices")
    file_kinds = frozenset({FileKind.CUDA_SOURCE})
    VALID = (
        Valid("__global__ void add(float *x) {}\n", path="kernel.cpp"),
        Valid("#include <torch/extension.h>\n", path="csrc/ops.h"),
    )
    INVALID = (
        Invalid("__global__ void add(float *x) { x[threadIdx.x] += 1; }\n", path="kernel.cu"),
        Invalid("#pragma once\n", path="csrc/attention.cuh"),
        Invalid("", path="empty.cu"),
    )

    def check(self, source: SourceFile) -> Iterator[Finding]:
        yield self.finding(source, 1)

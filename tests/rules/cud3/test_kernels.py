"""CUD303 on kernel modules: cupy, triton, numba; several codes at one site where each says
something different."""

from __future__ import annotations

from cudalint.finding import Severity
from tests.lint import codes_at, findings

CUPY_KERNELS = '''\
"""Fused ops with cupy. See the cupy.RawKernel and cupy.ElementwiseKernel docs."""
import cupy as cp
import numpy as np

_SOURCE = r"""
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
"""
scale_kernel = cp.RawKernel(_SOURCE, "scale")
squared_diff = cp.ElementwiseKernel(
    "float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "squared_diff"
)
l2norm = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
module = cp.RawModule(code=_SOURCE)


@cp.fuse()
def fused_mul_add(x, y, z):
    return x * y + z


def scale(x, a):
    # scale_kernel is a cupy.RawKernel: grid, block, args
    y = cp.empty_like(x)
    scale_kernel((x.size // 256 + 1,), (256,), (x, y, np.float32(a), x.size))
    return y
'''


def test_cupy_kernel_module(tmp_path):
    found = findings(tmp_path, CUPY_KERNELS, name="ops/kernels.py", codes=["CUD201", "CUD303"])
    assert codes_at(found) == [
        ("CUD201", 2, 8),
        ("CUD303", 11, 16), ("CUD303", 12, 16), ("CUD303", 15, 10), ("CUD303", 16, 10),
        ("CUD303", 19, 2),
    ]
    kernels = [f for f in found if f.code == "CUD303"]
    assert all("torch.mps.compile_shader" in f.message for f in kernels)
    assert all(f.severity is Severity.ERROR for f in kernels)


TRITON_KERNELS = '''\
import torch

try:
    import triton
    import triton.language as tl
    HAS_TRITON = True
except ImportError:
    HAS_TRITON = False

if HAS_TRITON:

    @triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=["n"])
    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs), mask)


@triton.jit
def _unguarded(x_ptr):
    pass


def add(x, y):
    if not (HAS_TRITON and x.is_cuda):
        return x + y
    out = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), 128),)
    add_kernel[grid](x, y, out, x.numel())
    return out
'''


def test_triton_kernels(tmp_path):
    found = findings(tmp_path, TRITON_KERNELS, codes=["CUD201", "CUD303"])
    assert codes_at(found) == [
        ("CUD201", 4, 12), ("CUD201", 5, 12), ("CUD303", 12, 6), ("CUD303", 21, 2),
    ]
    by_row = {f.location.row: f for f in found}
    assert by_row[12].guarded and by_row[12].severity is Severity.WARNING
    assert not by_row[21].guarded


def test_numba_cuda_aliases(tmp_path):
    source = '''\
import numba
from numba import cuda as nbc, njit, vectorize


@nbc.jit
def increment(a):
    i = nbc.grid(1)
    a[i] += 1


@numba.cuda.jit("void(float32[:])", fastmath=True)
def fast(a):
    pass


@njit(parallel=True)
def cpu(a):
    return a


@vectorize(["float32(float32)"], target="cuda")
def gpu_ufunc(x):
    return x


device_fn = nbc.jit(device=True)(cpu)
increment[32, 32](data)
'''
    found = findings(tmp_path, source, codes=["CUD303"])
    assert codes_at(found) == [
        ("CUD303", 5, 2), ("CUD303", 11, 2), ("CUD303", 21, 2), ("CUD303", 26, 13),
    ]


def test_pycuda_and_jiterator(tmp_path):
    source = '''\
import pycuda.autoinit
from pycuda.compiler import SourceModule
import torch
from torch.cuda import jiterator

mod = SourceModule(KERNEL)
gelu = jiterator._create_jit_fn(CODE)
pair = torch.cuda.jiterator._create_multi_output_jit_fn(CODE, num_outputs=2)
lib = torch.mps.compile_shader(METAL)
'''
    found = findings(tmp_path, source, codes=["CUD303"])
    assert codes_at(found) == [("CUD303", 6, 7), ("CUD303", 7, 8), ("CUD303", 8, 8)]

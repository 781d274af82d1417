"""CUD304 (Python part): NVIDIA libraries loaded with ctypes."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalint.engine.running.runner import RunOptions, check_file
from cudalint.engine.walk.context import Settings
from cudalint.finding import Finding
from cudalint.kinds import FileKind
from cudalint.rules.cud3_native.ctypes_libs import CudaLibraryLoad, cuda_library
from tests.lint import codes_at


def _check(tmp_path: Path, source: str) -> list[Finding]:
    # The class itself: CUD304 also has FileRules (CMake, ELF) in other modules.
    path = tmp_path / "native.py"
    path.write_text(source)
    report = check_file(path, FileKind.PYTHON, [CudaLibraryLoad], Settings(), RunOptions())
    return report.findings


@pytest.mark.parametrize(
    ("name", "library"),
    [
        ("libcudart.so.12", "cudart"),
        ("/usr/local/cuda/lib64/libcublasLt.so.12.1", "cublasLt"),
        ("cudart64_110.dll", "cudart"),
        ("nvcuda.dll", "nvcuda"),
        ("libcudnn_cnn_infer.so.8", "cudnn_cnn_infer"),
        ("nccl", "nccl"),
        ("libnvidia-ml.so.1", "nvidia-ml"),
        ("libc.so.6", None),
        ("libcudaops.so", None),
        ("lib64", None),
        ("libtorch_cuda.so", None),
    ],
)
def test_library_names(name, library):
    assert cuda_library(name) == library


def test_native_module(tmp_path):
    source = '''\
import ctypes
import ctypes.util
import os

CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")


def load_cudart():
    path = ctypes.util.find_library("cudart")
    if path is None:
        path = os.path.join(CUDA_HOME, "lib64", "libcudart.so")
    return ctypes.CDLL(path)


libc = ctypes.CDLL("libc.so.6")
nvml = ctypes.cdll.LoadLibrary("libnvidia-ml.so.1")
print("could not load libcudart.so, is CUDA installed?")
'''
    found = _check(tmp_path, source)
    # `ctypes.CDLL(path)` hides the name in a variable: the find_library call is what we see.
    assert codes_at(found) == [("CUD304", 9, 12), ("CUD304", 16, 8)]
    assert "cudart" in found[0].message


def test_guarded_load(tmp_path):
    source = (
        "import ctypes, torch\n"
        "if torch.cuda.is_available():\n"
        "    cublas = ctypes.CDLL('libcublas.so')\n"
    )
    (found,) = _check(tmp_path, source)
    assert found.guarded

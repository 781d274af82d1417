"""CUD304 (Python): NVIDIA libraries loaded by hand with ctypes (data/cuda_libraries.toml).

CMake files and ELF binaries under the same code are FileRules of their own modules.
"""

from __future__ import annotations

import fnmatch
import re
from functools import cache
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import Invalid, PythonRule
from cudalint.engine.first_pass.prefilter import Terms, word
from cudalint.rules import arguments, tables

if TYPE_CHECKING:
    from cudalint.engine.walk.context import Settings

# libcudart.so.12 / cudart64_12.dll / libcublasLt.so / libcudnn_ops_infer.so.8 -> the stem
_LIBRARY_FILE = re.compile(
    r"^(?:lib)?(?P<stem>[A-Za-z][\w-]*?)(?:64_\d*)?(?:\.(?:so|dll|dylib)(?:\..*)?)?$"
)


@cache
def _table() -> tuple[frozenset[str], tuple[str, ...]]:
    table = tables.load("cuda_libraries.toml")
    return frozenset(table["loaders"]), tuple(table["libraries"])


def cuda_library(text: str) -> str | None:
    """The CUDA library a file name or path names: "/usr/lib/libcudart.so.12" -> "cudart"."""
    name = re.split(r"[/\\]", text)[-1]
    match = _LIBRARY_FILE.match(name)
    if match is None:
        return None
    stem = match.group("stem")
    _, libraries = _table()
    return stem if any(fnmatch.fnmatchcase(stem, glob) for glob in libraries) else None


class CudaLibraryLoad(PythonRule):
    """
    ## What it does
    Finds NVIDIA libraries loaded by hand: `ctypes.CDLL("libcudart.so.12")`,
    `ctypes.cdll.LoadLibrary("libcublas.so")`, `ctypes.util.find_library("cudart")`,
    `numpy.ctypeslib.load_library("libcudnn", path)`, also when the name is built from a path
    (`os.path.join(cuda_home, "lib64", "libcudart.so")`, `f"libnvrtc.so.{v}"`). The libraries
    are the CUDA runtime and driver, cuBLAS, cuDNN, NCCL, cuFFT, cuRAND, cuSPARSE, cuSOLVER,
    NVRTC, NVTX, nvJPEG, NVML, CUPTI and TensorRT.

    Other libraries (`ctypes.CDLL("libc.so.6")`) and library names in messages are not
    reported.

    ## Why is this bad?
    None of these libraries exists on a Mac: the load raises `OSError` (or `find_library`
    returns None and the next call fails).

    ## Example
    ```python
    import ctypes

    cudart = ctypes.CDLL("libcudart.so")
    cudart.cudaDeviceSynchronize()
    ```

    ## Use instead
    ```python
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    elif torch.backends.mps.is_available():
        torch.mps.synchronize()
    ```
    """

    code = "CUD304"
    follows_assignments = False
    name = "cuda-build"
    primary = False  # the CMake/ELF FileRules document CUD304; this is its Python part
    message = "loads an NVIDIA CUDA library"
    VALID = (
        "import ctypes\nlibc = ctypes.CDLL('libc.so.6')\n",
        "import ctypes.util\npath = ctypes.util.find_library('m')\n",
        "print('could not load libcudart.so')\n",
        "import ctypes\nlib = ctypes.CDLL(os.path.join(here, 'libmyops.so'))\n",
        "import ctypes\nlib = ctypes.CDLL('libcudaops_cpu.so')\n",
    )
    INVALID = (
        Invalid("import ctypes\ncudart = ctypes.CDLL('libcudart.so.12')\n"),
        Invalid("import ctypes\nlib = ctypes.cdll.LoadLibrary('libcublas.so')\n"),
        Invalid("from ctypes.util import find_library\npath = find_library('cudart')\n"),
        Invalid("import ctypes.util\nnvml = ctypes.util.find_library('nvidia-ml')\n"),
        Invalid("import ctypes\nlib = ctypes.CDLL(os.path.join(cuda_home, 'lib64', "
                "'libcudart.so'))\n"),
        Invalid("import ctypes\nlib = ctypes.CDLL(f'libnvrtc.so.{version}')\n"),
        Invalid("from ctypes import WinDLL\nlib = WinDLL('cudart64_110.dll')\n"),
        Invalid("import ctypes\ndriver = ctypes.CDLL('libcuda.so.1')\n"),
        Invalid("import ctypes\nlib = ctypes.CDLL('libcudnn_ops_infer.so.8')\n"),
    )

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """Each finding is at a call of a loader, which names the loader's last part (`CDLL`,
        `LoadLibrary`), or its alias, whose import names it: a function naming `ctypes` or
        only what `from ctypes import byref` binds calls none."""
        loaders, _ = _table()
        leaves = sorted({loader.rpartition(".")[2] for loader in loaders})
        return Terms(words=frozenset(leaves), follow=tuple(word(leaf) for leaf in leaves))

    def visit_Call(self, node: cst.Call) -> None:
        loaders, _ = _table()
        qualified = self.ctx.call_name(node)
        if qualified not in loaders:
            return
        name = arguments.argument(node, 0, "name")
        if name is None:
            name = arguments.argument(node, 0, "libname")
        if name is None:
            return
        library = next(filter(None, map(cuda_library, arguments.string_parts(name))), None)
        if library is not None:
            self.report(node, f"`{qualified}` loads {library}, an NVIDIA CUDA library that "
                              "does not exist on a Mac; use the torch API that wraps it")

"""CUD304: builds and binaries tied to CUDA. This module reads CMake files; `elf.py` reads
shared libraries and `ctypes_libs.py` Python's `ctypes` loads, under the same code."""

from __future__ import annotations

from collections.abc import Iterator

from cudalint.engine.contract import FileRule, Invalid, Valid
from cudalint.finding import Finding
from cudalint.formats import cmake
from cudalint.formats.cmake import Invocation
from cudalint.kinds import FileKind, SourceFile

_PACKAGES = frozenset({"CUDA", "CUDATOOLKIT", "CUDNN", "NCCL", "TENSORRT"})
_LEGACY = frozenset({"cuda_add_library", "cuda_add_executable", "cuda_compile",
                     "cuda_wrap_srcs", "cuda_add_cublas_to_target"})
_CONDITION_WORDS = ("CUDA", "NVCC", "GPU")


class CudaBuildFile(FileRule):
    """
    ## What it does
    Finds builds and binaries tied to CUDA:
    - CMake (`CMakeLists.txt`, `*.cmake`): `enable_language(CUDA)`, `project(... LANGUAGES
      ... CUDA)`, `find_package(CUDA)`/`find_package(CUDAToolkit)` (also cuDNN, NCCL,
      TensorRT), and the legacy FindCUDA commands (`cuda_add_library`, ...). Command names
      are case-insensitive and comments are skipped. Inside `if(CMAKE_CUDA_COMPILER)`,
      `if(USE_CUDA)` and other conditions naming CUDA, and for a `find_package` without
      `REQUIRED`, the finding is guarded (a warning).
    - Shared libraries in the tree (`*.so`, `*.so.N`) whose ELF dynamic section needs an
      NVIDIA library (`libcudart`, `libcublas`, `libcudnn`, `libnccl`, `libcuda`, ...) or
      PyTorch's CUDA libraries (`libtorch_cuda`, `libc10_cuda`). The file is read, never
      loaded; a Mach-O or other non-ELF file is skipped, a damaged ELF file is one error line.
    - Python: `ctypes.CDLL("libcudart.so")` and other hand-loaded NVIDIA libraries.

    ## Why is this bad?
    A CMake project that enables the CUDA language fails to configure without `nvcc`, and a
    binary linked against the CUDA runtime cannot be loaded where there is none. Severity:
    error (a blocker: no automatic fix exists).

    ## Example
    ```cmake
    project(fastattn LANGUAGES CXX CUDA)
    find_package(CUDAToolkit REQUIRED)
    ```

    ## Use instead
    ```cmake
    project(fastattn LANGUAGES CXX)
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
      enable_language(CUDA)
      find_package(CUDAToolkit REQUIRED)
    endif()
    ```
    and build binaries from source on each platform instead of committing Linux CUDA builds.
    A CMake or YAML-style `# noqa: CUD304` comment on the line suppresses it; a binary takes
    `per-file-ignores`.
    """

    code = "CUD304"
    name = "cuda-build"
    message = "build tied to CUDA"
    file_kinds = frozenset({FileKind.CMAKE})
    VALID = (
        Valid("project(fastattn LANGUAGES CXX)\n# enable_language(CUDA)\n",
              path="CMakeLists.txt"),
        Valid('message(STATUS "CUDA support: off")\nset(USE_CUDA OFF)\n',
              path="CMakeLists.txt"),
        Valid("include(CheckLanguage)\ncheck_language(CUDA)\n", path="cmake/cuda.cmake"),
        Valid("find_package(Torch REQUIRED)\n", path="CMakeLists.txt"),
    )
    INVALID = (
        Invalid("cmake_minimum_required(VERSION 3.18)\nproject(fastattn LANGUAGES CXX CUDA)\n",
                path="CMakeLists.txt"),
        Invalid("ENABLE_LANGUAGE(CUDA)\n", path="CMakeLists.txt"),
        Invalid("find_package(CUDAToolkit REQUIRED)\nfind_package(CUDA 11.0)\n",
                path="CMakeLists.txt", count=2),
        Invalid("project(x\n  VERSION 1.0\n  LANGUAGES CXX CUDA  # noqa: E501\n)\n",
                path="CMakeLists.txt"),
        Invalid("if(CMAKE_CUDA_COMPILER)\n  enable_language(CUDA)\nendif()\n",
                path="cmake/gpu.cmake"),
        Invalid("cuda_add_library(kernels SHARED kernels.cu)\n", path="CMakeLists.txt"),
    )

    def check(self, source: SourceFile) -> Iterator[Finding]:
        conditions: list[bool] = []
        for invocation in cmake.invocations(source.text or ""):
            name = invocation.name
            if name == "if":
                conditions.append(_names_cuda(invocation))
            elif name == "elseif" and conditions:
                conditions[-1] = _names_cuda(invocation)
            elif name == "else" and conditions:
                conditions[-1] = False
            elif name == "endif" and conditions:
                conditions.pop()
            else:
                message = _problem(invocation)
                if message is not None:
                    guarded = any(conditions) or _optional(invocation)
                    yield self.finding(source, invocation.row, invocation.column,
                                       message=message, guarded=guarded)


def _names_cuda(invocation: Invocation) -> bool:
    return any(word in value.upper() for value in invocation.values()
               for word in _CONDITION_WORDS)


def _optional(invocation: Invocation) -> bool:
    return invocation.name == "find_package" and "REQUIRED" not in invocation.values()


def _problem(invocation: Invocation) -> str | None:
    values = [value.upper() for value in invocation.values()]
    name = invocation.name
    if name == "enable_language" and "CUDA" in values:
        return "`enable_language(CUDA)` fails to configure without nvcc; enable it only " \
               "when `check_language(CUDA)` finds a compiler"
    if name == "project" and "CUDA" in values[1:]:
        return "`project(... CUDA)` fails to configure without nvcc; enable CUDA only when " \
               "`check_language(CUDA)` finds a compiler"
    if name == "find_package" and values and values[0] in _PACKAGES:
        return f"`find_package({invocation.values()[0]})` looks for the NVIDIA CUDA toolkit, " \
               "absent on a Mac"
    if name in _LEGACY:
        return f"`{name}` (FindCUDA) compiles with nvcc, absent on a Mac"
    return None

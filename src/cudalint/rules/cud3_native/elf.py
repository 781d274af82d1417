"""CUD304 (binaries): shared libraries whose ELF dynamic section needs a CUDA library.

Read with pyelftools from the bytes; the library is never loaded.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator

from cudalint.engine.contract import FileRule, Invalid, Valid
from cudalint.engine.lint.python import error_finding, one_line
from cudalint.finding import Finding
from cudalint.kinds import FileKind, SourceFile
from cudalint.rules.cud3_native.ctypes_libs import cuda_library

_ELF_MAGIC = b"\x7fELF"
# PyTorch's own CUDA libraries: an extension linked against them is a CUDA build.
_TORCH_CUDA = ("libtorch_cuda", "libc10_cuda")
_PN_XNUM = 0xFFFF  # the real program-header count is in section header 0


def needed_libraries(data: bytes) -> list[str]:
    """DT_NEEDED entries of an ELF file (raises on a damaged one)."""
    # pyelftools is imported when a binary is read, not on every run's start-up
    from elftools.elf.dynamic import DynamicSegment
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(data))
    if elf["e_phnum"] == _PN_XNUM and not elf["e_shoff"]:
        raise ValueError("damaged: 0xFFFF program headers, with no section header to count them")
    if elf.num_segments() == 0 and elf["e_type"] == "ET_DYN":
        raise ValueError("damaged: a shared library without program headers")
    needed: list[str] = []
    for segment in elf.iter_segments():
        if isinstance(segment, DynamicSegment):
            # pyelftools sets `needed` on DT_NEEDED tags at run time
            needed.extend(str(getattr(tag, "needed", "")) for tag in segment.iter_tags("DT_NEEDED"))
    return needed


def is_cuda_library(name: str) -> bool:
    return cuda_library(name) is not None or name.startswith(_TORCH_CUDA)


def minimal_shared_library(*needed: str) -> bytes:
    """A tiny ELF64 shared object whose dynamic section needs `needed`, for examples and
    tests. Its offsets are chosen so that every byte is ASCII (the examples are text)."""
    strtab, offsets = b"\0", []
    for name in needed:
        offsets.append(len(strtab))
        strtab += name.encode() + b"\0"
    dynamic = b"".join(struct.pack("<qQ", 1, offset) for offset in offsets)  # DT_NEEDED
    dynamic += struct.pack("<qQqQqQ", 5, 0x200, 10, len(strtab), 0, 0)  # STRTAB, STRSZ, NULL
    size = 0x300
    header = _ELF_MAGIC + bytes([2, 1, 1]) + bytes(9)  # 64-bit, little-endian, version 1
    header += struct.pack("<HHIQQQIHHHHHH", 3, 0x3E, 1, 0, 64, 0, 0, 64, 56, 2, 0, 0, 0)
    load = struct.pack("<IIQQQQQQ", 1, 4, 0, 0, 0, size, size, 0x1000)
    dynamic_header = struct.pack("<IIQQQQQQ", 2, 6, 0x100, 0x100, 0x100, len(dynamic),
                                 len(dynamic), 8)
    image = bytearray(size)
    image[0 : 64 + 2 * 56] = header + load + dynamic_header
    image[0x100 : 0x100 + len(dynamic)] = dynamic
    image[0x200 : 0x200 + len(strtab)] = strtab
    return bytes(image)


class CudaSharedLibrary(FileRule):
    """
    ## What it does
    Finds shared libraries (`*.so`, `*.so.N`) in the tree whose ELF dynamic section needs an
    NVIDIA CUDA library (`libcudart`, `libcublas`, `libcudnn`, `libnccl`, ...) or PyTorch's
    CUDA libraries. Part of CUD304 (see its page); a Mach-O or other non-ELF file is skipped,
    a damaged ELF file gives one error line.

    ## Why is this bad?
    The binary cannot be loaded where the CUDA runtime is missing, and a Linux ELF file never
    loads on a Mac anyway.

    ## Example
    ```text
    third_party/lib/libfastattn_kernels.so   (NEEDED libcudart.so.12)
    ```

    ## Use instead
    Build the library from source on each platform, with its CUDA parts optional.
    """

    code = "CUD304"
    name = "cuda-build"
    primary = False  # documented by the CMake rule
    message = "shared library linked against CUDA"
    file_kinds = frozenset({FileKind.SHARED_LIBRARY})
    VALID = (
        Valid(minimal_shared_library("libc.so.6", "libstdc++.so.6").decode("ascii"),
              path="libops.so"),
        Valid("version https://git-lfs.github.com/spec/v1\n", path="libkernels.so"),
        Valid("\xcf\xfa\xed\xfe", path="_C.cpython-311-darwin.so"),
    )
    INVALID = (
        Invalid(minimal_shared_library("libcudart.so.12", "libc.so.6").decode("ascii"),
                path="third_party/libkernels.so"),
        Invalid(minimal_shared_library("libtorch_cuda.so").decode("ascii"),
                path="_C.cpython-311-x86_64-linux-gnu.so.1"),
    )

    def check(self, source: SourceFile) -> Iterator[Finding]:
        if not source.data.startswith(_ELF_MAGIC):
            return
        try:
            needed = needed_libraries(source.data)
        except Exception as error:
            yield error_finding(source.path, f"could not read the ELF file: {one_line(error)}")
            return
        cuda = [name for name in needed if is_cuda_library(name)]
        if cuda:
            yield self.finding(source, 1, message=f"shared library needs {', '.join(cuda)}: "
                               "a CUDA build that cannot load on a Mac; build it from source "
                               "without CUDA there")

"""CUD304 (binaries): ELF shared libraries are read, never loaded; odd files never crash."""

from __future__ import annotations

from pathlib import Path

from cudalint.engine.running.runner import RunOptions, check_file
from cudalint.engine.walk.context import Settings
from cudalint.finding import Finding
from cudalint.kinds import FileKind
from cudalint.rules.cud3_native.elf import (
    CudaSharedLibrary,
    minimal_shared_library,
    needed_libraries,
)


def _check(tmp_path: Path, data: bytes, name: str = "libops.so") -> list[Finding]:
    path = tmp_path / name
    path.write_bytes(data)
    return check_file(path, FileKind.SHARED_LIBRARY, [CudaSharedLibrary], Settings(),
                      RunOptions()).findings


def test_needed_libraries():
    data = minimal_shared_library("libcudart.so.12", "libcublas.so.12", "libc.so.6")
    assert needed_libraries(data) == ["libcudart.so.12", "libcublas.so.12", "libc.so.6"]


def test_cuda_library_is_reported_once(tmp_path):
    data = minimal_shared_library("libcudart.so.12", "libnccl.so.2", "libm.so.6")
    [finding] = _check(tmp_path, data, "libkernels.so.1")
    assert finding.code == "CUD304"
    assert "libcudart.so.12, libnccl.so.2" in finding.message


def test_truncated_elf_is_one_error_line(tmp_path):
    [finding] = _check(tmp_path, minimal_shared_library("libcudart.so")[:100])
    assert finding.code is None
    assert "could not read the ELF file" in finding.message


def test_other_files_are_skipped(tmp_path):
    mach_o = b"\xcf\xfa\xed\xfe" + bytes(60)
    assert _check(tmp_path, mach_o, "_C.cpython-311-darwin.so") == []
    assert _check(tmp_path, b"") == []
    [header_only] = _check(tmp_path, b"\x7fELF")
    assert header_only.code is None

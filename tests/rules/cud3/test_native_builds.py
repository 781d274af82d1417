"""CUD301 JIT builds whose CUDA parts are built up in code, CUD501 nvcc through a built path,
and `CUDA_HOME is None` tests that warn or skip (a guard)."""

from __future__ import annotations

import textwrap

from tests.lint import codes_at, findings

OPS = '''\
import os
import subprocess
import warnings

from torch.utils.cpp_extension import CUDA_HOME, CppExtension, load, load_inline

HERE = os.path.dirname(__file__)
CUDA_SOURCES = [os.path.join(HERE, f) for f in ("ops.cpp", "ops_kernel.cu")]
CPU_SOURCES = [os.path.join(HERE, f) for f in ("ops.cpp", "ops_cpu.cpp")]


def build():
    """Builds ops_kernel.cu with nvcc when it can."""
    cuda_ops = load(name="ops", sources=CUDA_SOURCES)
    cpu_ops = load(name="ops_cpu", sources=CPU_SOURCES)
    inline = load_inline("k", cpp_sources=[CPP], extra_cuda_cflags=["-O3", "-lineinfo"])
    return cuda_ops, cpu_ops, inline


def extension():
    args = {"cxx": ["-O3"]}
    args["nvcc"] = ["-O3"]
    flags = dict(cxx=["-O2"], nvcc=["--use_fast_math"])
    print("nvcc flags:", args["cxx"])
    return CppExtension("k", ["k.cpp"], extra_compile_args=args), flags


def toolkit_version(cuda_dir, home):
    subprocess.run([cuda_dir + "/bin/nvcc", "--version"], check=True)
    os.system(f"{home}/bin/nvcc --version > nvcc.txt")
    subprocess.run(["echo", "nvcc"], check=True)
    subprocess.run([os.path.join(HERE, "bin", "build.sh"), "nvcc"], check=True)


def include_dirs():
    if CUDA_HOME is None:
        warnings.warn("CUDA_HOME is not set: the CPU ops only")
        return []
    return [os.path.join(CUDA_HOME, "include")]
'''


def test_jit_builds_with_built_sources_and_flags(tmp_path):
    found = findings(tmp_path, OPS, name="ops.py", codes=["CUD301"])
    assert codes_at(found) == [
        ("CUD301", 14, 16), ("CUD301", 16, 14), ("CUD301", 22, 10), ("CUD301", 23, 31),
        ("CUD301", 39, 26),
    ]
    by_row = {f.location.row: f for f in found}
    assert by_row[39].guarded  # after `if CUDA_HOME is None: warn; return`
    assert not by_row[14].guarded


def test_nvcc_through_a_built_path(tmp_path):
    found = findings(tmp_path, OPS, name="ops.py", codes=["CUD501"])
    assert codes_at(found) == [("CUD501", 29, 21), ("CUD501", 30, 15)]


def test_cuda_home_check_that_skips_a_test(tmp_path):
    source = textwrap.dedent('''\
        import pytest
        from torch.utils.cpp_extension import CUDA_HOME, load


        @pytest.mark.skipif(CUDA_HOME is None, reason="needs the CUDA toolkit")
        def test_kernel():
            ops = load(name="k", sources=["k.cpp", "k.cu"])
            assert ops is not None
        ''')
    (finding,) = findings(tmp_path, source, name="test_ops.py", codes=["CUD301"])
    assert finding.location.row == 7 and finding.guarded

"""CUD301 on a realistic setup.py and on JIT-compiled extensions."""

from __future__ import annotations

from cudalint.finding import Severity
from tests.lint import codes_at, findings
from tests.rules.cud3.project import SETUP


def test_setup_with_cuda_and_cpu_extensions(tmp_path):
    found = findings(tmp_path, SETUP, name="setup.py", codes=["CUD301"])
    # The guarded choice of CUDAExtension and the two unconditional ones. `CUDA_HOME is not
    # None` is a test, not a use; the `nvcc` flags add nothing to a file that builds a
    # CUDAExtension; CppExtension is fine.
    assert codes_at(found) == [("CUD301", 18, 21), ("CUD301", 23, 9), ("CUD301", 28, 9)]
    chosen, direct, _ = sorted(found, key=lambda f: f.location)
    assert chosen.guarded and chosen.severity is Severity.WARNING
    assert not direct.guarded and direct.severity is Severity.ERROR
    assert "CppExtension" in direct.message


def test_nvcc_flags_without_cuda_extension(tmp_path):
    source = (
        "from setuptools import Extension, setup\n"
        "args = dict(cxx=['-O3'], nvcc=['-O3'])\n"
        "flags = {'cxx': ['-O2']}\n"
        "flags['nvcc'] = ['--use_fast_math']\n"
        "setup(ext_modules=[Extension('k', ['k.cpp'], extra_compile_args=flags)])\n"
    )
    found = findings(tmp_path, source, name="setup.py", codes=["CUD301"])
    assert codes_at(found) == [("CUD301", 2, 26), ("CUD301", 4, 7)]


def test_jit_loads(tmp_path):
    source = '''\
import os
from torch.utils import cpp_extension
from torch.utils.cpp_extension import load, load_inline

HERE = os.path.dirname(__file__)
cpu_ops = load(name="cpu_ops", sources=[os.path.join(HERE, "ops.cpp")])
gpu_ops = load(name="gpu_ops", sources=[os.path.join(HERE, "ops.cpp"), f"{HERE}/ops_kernel.cu"])
flagged = load("flagged", SOURCES, extra_cuda_cflags=["-O3"])
inline_cpu = load_inline("i", cpp_sources=CPP, functions=["f"])
inline_none = load_inline("n", CPP, None, functions=["f"])
inline_gpu = cpp_extension.load_inline("g", CPP, CUDA, functions=["f"])
with_cuda = load_inline("w", cpp_sources=CPP, with_cuda=True)
print("building ops.cu with nvcc; set CUDA_HOME")
home = os.environ["CUDA_HOME"]
'''
    found = findings(tmp_path, source, name="jit.py", codes=["CUD301"])
    assert codes_at(found) == [
        ("CUD301", 7, 11), ("CUD301", 8, 11), ("CUD301", 11, 14), ("CUD301", 12, 13),
    ]
    assert "torch.mps.compile_shader" in sorted(found, key=lambda f: f.location)[2].message


def test_cuda_home_paths_and_tests(tmp_path):
    source = (
        "import torch.utils.cpp_extension as ext\n"
        "include = os.path.join(ext.CUDA_HOME, 'include')\n"
        "try:\n"
        "    from torch.utils.cpp_extension import CUDA_HOME\n"
        "except ImportError:\n"
        "    CUDA_HOME = None\n"
        "if CUDA_HOME is not None:\n"
        "    version = nvcc_version(CUDA_HOME)\n"
        "if not CUDA_HOME or not torch.cuda.is_available():\n"
        "    print('no CUDA: building the CPU ops only')\n"
        "assert CUDA_HOME, 'set CUDA_HOME'\n"
        "home = CUDA_HOME or '/usr/local/cuda'\n"
        "print('CUDA_HOME =', os.environ.get('CUDA_HOME'))\n"
    )
    found = findings(tmp_path, source, codes=["CUD301"])
    assert codes_at(found) == [
        ("CUD301", 2, 24), ("CUD301", 8, 28), ("CUD301", 11, 8), ("CUD301", 12, 8),
    ]
    assert [f.guarded for f in sorted(found, key=lambda f: f.location)] == [
        False, True, False, False,
    ]


# An environment report (a `collect_env.py` as detection and segmentation libraries ship).
COLLECT_ENV = '''"""Collect the environment for bug reports: prints CUDA_HOME and nvcc's version."""
import os
import subprocess
import sys

import torch
from torch.utils.cpp_extension import CUDA_HOME


def collect_env():
    env_info = {}
    env_info["sys.platform"] = sys.platform
    env_info["CUDA_HOME"] = CUDA_HOME
    if CUDA_HOME and os.path.isdir(os.path.join(CUDA_HOME, "bin")):
        env_info["NVCC"] = os.path.join(CUDA_HOME, "bin", "nvcc")
    rows = [("PyTorch", torch.__version__), ("CUDA_HOME", str(CUDA_HOME))]
    print(f"CUDA_HOME: {CUDA_HOME}")
    print("CUDA_HOME =", CUDA_HOME)
    sys.stdout.write("CUDA_HOME={}\\n".format(CUDA_HOME))
    return env_info, rows
'''


def test_an_environment_report_that_shows_cuda_home_is_no_build(tmp_path):
    found = findings(tmp_path, COLLECT_ENV, name="collect_env.py", codes=["CUD301"])
    # only the paths built from it, under the truthiness test (a guard): never the text
    assert [(f.location.row, f.guarded) for f in sorted(found, key=lambda f: f.location)] \
        == [(14, True), (15, True)]


def test_the_truthiness_of_cuda_home_guards_as_is_not_none_does(tmp_path):
    source = (
        "import os\nfrom torch.utils.cpp_extension import CUDA_HOME\n\n"
        "def include_dirs():\n"
        "    if CUDA_HOME and os.path.isdir(os.path.join(CUDA_HOME, 'include')):\n"
        "        return [os.path.join(CUDA_HOME, 'include')]\n"
        "    return []\n\n"
        "def library_dirs():\n"
        "    if not CUDA_HOME:\n"
        "        return []\n"
        "    return [os.path.join(CUDA_HOME, 'lib64')]\n\n"
        "def unguarded():\n"
        "    return [os.path.join(CUDA_HOME, 'include')]\n"
    )
    found = sorted(findings(tmp_path, source, codes=["CUD301"]), key=lambda f: f.location)
    assert [(f.location.row, f.severity) for f in found] == [
        (5, Severity.WARNING), (6, Severity.WARNING), (12, Severity.WARNING),
        (15, Severity.ERROR)]


def test_cuda_home_given_to_a_build_is_still_reported(tmp_path):
    source = (
        "import os, subprocess\nfrom torch.utils.cpp_extension import CUDA_HOME\n"
        "subprocess.run(['make'], env={**os.environ, 'CUDA_HOME': CUDA_HOME})\n"
        "os.environ['CUDA_HOME'] = CUDA_HOME\n"
        "cmd = [f'{CUDA_HOME}/bin/nvcc', '--version']\n"
        "flags = {'CUDA_HOME': CUDA_HOME}\n"  # a table of values: text
    )
    found = findings(tmp_path, source, codes=["CUD301"])
    assert codes_at(found) == [("CUD301", 3, 58), ("CUD301", 4, 27), ("CUD301", 5, 11)]

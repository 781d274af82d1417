"""Reading a setup.py without running it: CUDA extension modules and the project's packages."""

from __future__ import annotations

from cudalint.engine.project.setup_py import read_setup
from tests.rules.cud3.project import SETUP


def test_realistic_setup():
    facts = read_setup(SETUP)
    # `detlib._ops` is a CppExtension unless CUDA is there: it has a CPU build.
    assert facts.cuda_extensions == {"detlib._C", "detlib._roi_align_cuda"}
    assert facts.packages == {"detlib"}


def test_names_from_constants_and_aliases():
    facts = read_setup(
        "from torch.utils.cpp_extension import CUDAExtension as CE\n"
        "from torch.utils import cpp_extension\n"
        "PKG = 'fastops'\n"
        "SUFFIX = '_cuda'\n"
        "exts = [CE(PKG + '._C', ['a.cu']), cpp_extension.CUDAExtension(name=f'{PKG}.k{SUFFIX}',"
        " sources=s)]\n"
        "ext = CE(name=unknown_name(), sources=s)\n"
        "Builder = CE if WITH_CUDA else cpp_extension.CppExtension\n"
        "mixed = Builder('fastops._mixed', s)\n"
        "Only = CE\n"
        "more = Only('fastops._D', s)\n"
        "both = [CE('fastops._E', s), cpp_extension.CppExtension('fastops._E', s)]\n"
        "setup(name='fast-ops', packages=['fastops', 'fastops.layers'], py_modules=['tool'])\n"
    )
    assert facts.cuda_extensions == {"fastops._C", "fastops.k_cuda", "fastops._D"}
    assert facts.packages == {"fast_ops", "fastops", "tool"}


def test_setuptools_extension_with_cuda_sources():
    facts = read_setup(
        "from setuptools import Extension\n"
        "a = Extension('pkg.gpu', sources=['src/kernel.cu', 'src/bind.cpp'])\n"
        "b = Extension('pkg.cpu', sources=['src/bind.cpp'])\n"
        "c = CppExtension('pkg.cpp', ['x.cpp'])\n"
    )
    assert facts.cuda_extensions == {"pkg.gpu"}


def test_unparsable_setup_falls_back_to_a_regex():
    facts = read_setup("print 'building'\next = CUDAExtension('old._C', ['k.cu'])\n")
    assert facts.cuda_extensions == {"old._C"}

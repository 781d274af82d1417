"""A small extension project written into tmp_path, for the CUD301 and CUD305 tests."""

from __future__ import annotations

from pathlib import Path

# `detlib._ops` has a CPU build (CppExtension unless CUDA is there), as in detectron2;
# `detlib._C` and `detlib._roi_align_cuda` exist only where CUDA built them.
SETUP = '''\
import glob
import os

import torch
from setuptools import find_packages, setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension

NAME = "detlib"


def get_extensions():
    here = os.path.dirname(os.path.abspath(__file__))
    sources = glob.glob(os.path.join(here, "csrc", "*.cpp"))
    cuda_sources = glob.glob(os.path.join(here, "csrc", "cuda", "*.cu"))
    extension = CppExtension
    extra_compile_args = {"cxx": ["-O3"]}
    if (torch.cuda.is_available() and CUDA_HOME is not None) or os.getenv("FORCE_CUDA") == "1":
        extension = CUDAExtension
        sources += cuda_sources
        extra_compile_args["nvcc"] = ["-O3", "--use_fast_math"]
    return [
        extension(f"{NAME}._ops", sources, extra_compile_args=extra_compile_args),
        CUDAExtension(
            "detlib._roi_align_cuda",
            ["csrc/roi_align.cu"],
            extra_compile_args={"cxx": [], "nvcc": ["-O2"]},
        ),
        CUDAExtension(name=NAME + "._C", sources=cuda_sources),
        CppExtension("detlib._cpu_ops", ["csrc/cpu_ops.cpp"]),
    ]


setup(
    name="detlib",
    packages=find_packages(),
    ext_modules=get_extensions(),
    cmdclass={"build_ext": BuildExtension},
)
'''


def write_project(root: Path) -> None:
    """setup.py, the `detlib` package and an unrelated `other` package with its own `_C`."""
    (root / "setup.py").write_text(SETUP)
    for package in ("detlib", "detlib/layers", "other"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")

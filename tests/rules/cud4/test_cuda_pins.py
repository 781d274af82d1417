"""What makes a pin, an index or an image CUDA-only (shared by CUD401-CUD404)."""

from __future__ import annotations

import pytest

from cudalint.finding import Severity
from cudalint.rules.cud4_pins.cuda_pins import (
    conda_problem,
    cuda_image,
    index_problem,
    requirement_problem,
)


@pytest.mark.parametrize(
    ("text", "severity", "guarded"),
    [
        ("torch==2.1.0+cu121", Severity.ERROR, False),
        ("torch-scatter==2.1.2+pt21cu121", Severity.ERROR, False),
        ("jaxlib==0.4.20+cuda12.cudnn89", Severity.ERROR, False),
        ("cupy-cuda12x>=13", Severity.ERROR, False),
        ("Flash_Attn==2.5.6", Severity.ERROR, False),
        ("nvidia-cublas-cu12", Severity.ERROR, False),
        ("jax[cuda12]>=0.4", Severity.ERROR, False),
        ("tensorflow[and-cuda]==2.15", Severity.WARNING, False),
        ("bitsandbytes", Severity.WARNING, False),
        ('triton; sys_platform == "linux"', Severity.INFO, False),
        ("flash-attn @ https://github.com/x/flash_attn-2.5.0+cu122torch2.1-cp310-linux.whl",
         Severity.ERROR, False),
        ("git+https://github.com/Dao-AILab/flash-attention#egg=flash-attn", Severity.ERROR,
         False),
    ],
)
def test_cuda_requirements(text, severity, guarded):
    problem = requirement_problem(text)
    assert problem is not None
    assert (problem.severity, problem.guarded) == (severity, guarded)


@pytest.mark.parametrize("text", ["torch==2.3.0", "torch>=2.1,<3", "numpy", "./local/pkg",
                                  "jax[cpu]", "torch==2.3.0+cpu", "einops; python_version<'3.9'"])
def test_portable_requirements(text):
    assert requirement_problem(text) is None


def test_indexes():
    cuda = "https://download.pytorch.org/whl/cu121"
    assert index_problem("--index-url", cuda).severity is Severity.ERROR
    assert index_problem("--extra-index-url", cuda).severity is Severity.WARNING
    assert index_problem("--find-links", "https://data.pyg.org/whl/torch-2.1.0+cu121.html")
    assert index_problem("--extra-index-url", "https://pypi.nvidia.com")
    assert index_problem("--index-url", "https://download.pytorch.org/whl/cpu") is None
    assert index_problem("--index-url", "https://pypi.org/simple") is None


@pytest.mark.parametrize(
    ("spec", "found"),
    [
        ("cudatoolkit=11.8", True), ("cuda-version>=12", True), ("pytorch-cuda=12.1", True),
        ("magma-cuda121", True), ("nvidia::cuda-nvcc", True), ("nvidia::some-tool", True),
        ("pytorch=2.1=*cuda*", True), ("pytorch=2.1.0=py3.10_cuda12.1_cudnn8.9.2_0", True),
        ("pytorch[build=*cuda*]", True), ("cupy", True), ("python=3.11", False),
        ("pytorch=2.1", False), ("numpy>=1.24", False), ("conda-forge::pytorch", False),
    ],
)
def test_conda_specs(spec, found):
    assert (conda_problem(spec) is not None) == found


@pytest.mark.parametrize(
    ("image", "found"),
    [
        ("nvidia/cuda:12.1.0-devel-ubuntu22.04", True), ("docker.io/nvidia/cuda", True),
        ("nvcr.io/nvidia/pytorch:24.01-py3", True), ("nvcr.io#nvidia/pytorch:23.10-py3", True),
        ("pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime", True),
        ("tensorflow/tensorflow:2.15.0-gpu", True), ("ghcr.io/org/app:cu121", True),
        ("python:3.11-slim", False), ("ubuntu:22.04", False), ("localhost:5000/app:1", False),
        ("pytorch/pytorch:2.1.0-cpu", False),
    ],
)
def test_images(image, found):
    assert cuda_image(image) is found

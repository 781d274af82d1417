"""CUD401/CUD402 from one package table for pip and conda names; CUD404 in composite
actions, reusable workflows and `env:` values."""

from __future__ import annotations

import textwrap

from tests.lint import codes_at, findings


def test_every_pip_name_of_the_package_table(tmp_path):
    source = textwrap.dedent('''\
        # tensorflow-gpu is not needed on a Mac
        numpy>=1.26
        tensorflow-gpu==2.10.0
        tensorflow>=2.16
        paddlepaddle-gpu==2.6.1
        paddlepaddle
        cupy-cuda12x
        onnxruntime-gpu>=1.17
        onnxruntime
        faiss-gpu
        faiss-cpu
        jax[cuda12]
        jax
        nvidia-cudnn-cu12==9.1.0.70
        ''')
    found = findings(tmp_path, source, name="requirements.txt", codes=["CUD402"])
    assert [row for _, row, _ in codes_at(found)] == [3, 5, 7, 8, 10, 12, 14]


def test_pip_names_in_a_conda_environment(tmp_path):
    source = textwrap.dedent('''\
        name: ml
        channels:
          - conda-forge
        dependencies:
          - numpy
          - onnxruntime-gpu
          - tensorflow-gpu
          - faiss-cpu
          - pip:
              - paddlepaddle-gpu
              - requests
        ''')
    found = findings(tmp_path, source, name="environment.yml", codes=["CUD401"])
    assert [row for _, row, _ in codes_at(found)] == [6, 7, 10]


def test_composite_action(tmp_path):
    source = textwrap.dedent('''\
        name: setup
        description: installs CUDA (the description is prose)
        runs:
          using: composite
          steps:
            - uses: actions/setup-python@v5
            - uses: Jimver/cuda-toolkit@v0.2.16
            - run: |
                echo "pip install torch --index-url https://download.pytorch.org/whl/cu121"
                pip install torch --index-url https://download.pytorch.org/whl/cu124
              shell: bash
        ''')
    found = findings(tmp_path, source, name=".github/actions/setup/action.yml",
                     codes=["CUD404"])
    assert codes_at(found) == [("CUD404", 7, 13), ("CUD404", 10, 39)]


def test_reusable_workflow_env_values(tmp_path):
    source = textwrap.dedent('''\
        on:
          workflow_call:
            inputs:
              device:
                type: string
                default: cuda
        env:
          TORCH_INDEX: https://download.pytorch.org/whl/cu121
          CPU_INDEX: https://download.pytorch.org/whl/cpu
          BASE_IMAGE: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
          DEVICE: cuda:0
          CUDA_HOME: /usr/local/cuda
        jobs:
          test:
            runs-on: ubuntu-latest
            env:
              IMAGE: nvcr.io/nvidia/pytorch:24.01-py3
            steps:
              - uses: ./.github/actions/setup-cuda
              - run: pytest
                env:
                  PIP_INDEX: https://download.pytorch.org/whl/cu118
        ''')
    found = findings(tmp_path, source, name=".github/workflows/reusable.yml", codes=["CUD404"])
    assert codes_at(found) == [
        ("CUD404", 8, 16), ("CUD404", 10, 15), ("CUD404", 17, 14), ("CUD404", 22, 22),
    ]

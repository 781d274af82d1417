"""CUD504 installs with options anywhere, CUD502 only the catalogue's variables in shell."""

from __future__ import annotations

import textwrap

from tests.lint import codes_at, findings

SETUP = textwrap.dedent('''\
    #!/usr/bin/env bash
    # apt-get install cuda-toolkit-12-4 (a comment)
    set -euo pipefail
    CUDA_FLAG="--cuda"
    CUDA_TESTS=1
    export CUDA_DEVICE_ORDER=PCI_BUS_ID
    echo "run: sudo apt install -y nvidia-driver-535"
    sudo apt-get update
    sudo apt-get --yes install cuda-toolkit-12-4
    apt-get -y -q -o Dpkg::Options::=--force-confnew install build-essential cuda-nvcc-12-4
    apt install -y nvidia-driver-535
    yum -y install cuda
    dnf --setopt=install_weak_deps=False install -y cuda-toolkit
    apt-get -y remove cuda-toolkit-11-8
    conda install -y -c nvidia cuda-toolkit=12.4 numpy
    pip install --no-cache-dir nvidia-cuda-runtime-cu12 nvidia-ml-py requests
    python train.py $CUDA_FLAG
    ''')


def test_toolkit_installs_with_options_anywhere(tmp_path):
    found = findings(tmp_path, SETUP, name="setup.sh", codes=["CUD504"])
    assert codes_at(found) == [
        ("CUD504", 9, 28), ("CUD504", 10, 74), ("CUD504", 11, 16), ("CUD504", 12, 16),
        ("CUD504", 13, 49), ("CUD504", 15, 28), ("CUD504", 16, 28),
    ]


def test_only_cuda_runtime_variables(tmp_path):
    found = findings(tmp_path, SETUP, name="setup.sh", codes=["CUD502"])
    assert codes_at(found) == [("CUD502", 6, 8)]

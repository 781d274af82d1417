"""CUD502: `CUDA_VISIBLE_DEVICES` set to "" or "-1" hides every GPU to force the CPU or MPS,
the portable choice: silent in Python, shell scripts and Dockerfiles; any other value is
reported."""

from __future__ import annotations

import textwrap

from tests.lint import codes_at, findings

PYTHON = '''\
    import os

    os.environ["CUDA_VISIBLE_DEVICES"] = "-1"


    def force_device(device, gpus):
        if device in ("cpu", "mps"):
            os.environ["CUDA_VISIBLE_DEVICES"] = ""
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
        os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
        os.environ.update(CUDA_VISIBLE_DEVICES="0")
        print("set CUDA_VISIBLE_DEVICES=-1 to run on the CPU")
    '''

SHELL = '''\
    #!/usr/bin/env bash
    if [ "$DEVICE" = cpu ]; then
      export CUDA_VISIBLE_DEVICES=""
    fi
    CUDA_VISIBLE_DEVICES=-1 python eval.py --device cpu
    CUDA_VISIBLE_DEVICES= python eval.py --device mps
    export CUDA_VISIBLE_DEVICES=0,1
    '''


def test_hiding_every_gpu_from_python_is_silent(tmp_path):
    found = findings(tmp_path, textwrap.dedent(PYTHON), codes=["CUD502"])
    assert codes_at(found) == [("CUD502", 10, 20), ("CUD502", 12, 23)]


def test_hiding_every_gpu_in_scripts_and_dockerfiles_is_silent(tmp_path):
    found = findings(tmp_path, textwrap.dedent(SHELL), name="eval.sh", codes=["CUD502"])
    assert codes_at(found) == [("CUD502", 7, 8)]
    dockerfile = "FROM python:3.11\nENV CUDA_VISIBLE_DEVICES=-1\nENV CUDA_VISIBLE_DEVICES=0\n"
    found = findings(tmp_path, dockerfile, name="Dockerfile", codes=["CUD502"])
    assert [f.location.row for f in found] == [3]

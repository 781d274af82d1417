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


# A CUDA wheel index kept in a variable, then used by a later pip command (issue 41).
FETCH_SCRIPT = """#!/bin/bash
set -euo pipefail
CUDA_TAG=cu129
TORCH_INDEX=https://download.pytorch.org/whl/${CUDA_TAG}
CPU_INDEX=https://download.pytorch.org/whl/cpu
export EXTRA="https://download.pytorch.org/whl/cu121"
echo "pip download --index-url $TORCH_INDEX torch"
pip download --index-url $TORCH_INDEX torch -d wheels/
pip install torch --extra-index-url "$EXTRA"
pip install --index-url "$CPU_INDEX" torch
TORCH_INDEX=https://pypi.org/simple
pip install --index-url $TORCH_INDEX torch
"""


def test_a_cuda_index_kept_in_a_shell_variable(tmp_path):
    found = findings(tmp_path, FETCH_SCRIPT, name="scripts/fetch_wheels.sh", codes=["CUD402"])
    assert codes_at(found) == [("CUD402", 8, 26), ("CUD402", 9, 37)]
    download, extra = sorted(found, key=lambda f: f.location)
    assert "`https://download.pytorch.org/whl/cu129`" in download.message
    assert "`$TORCH_INDEX`" in download.message and str(download.severity) == "error"
    assert str(extra.severity) == "warning"


def test_a_cuda_index_kept_in_a_variable_of_a_ci_run_block(tmp_path):
    workflow = (
        "on: push\njobs:\n  wheels:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: |\n"
        "          TORCH_INDEX=https://download.pytorch.org/whl/cu129\n"
        "          echo \"using $TORCH_INDEX\"\n"
        "          pip download --index-url $TORCH_INDEX torch\n"
        "      - run: pip install --index-url $TORCH_INDEX torch\n"  # another step's variable
    )
    found = findings(tmp_path, workflow, name=".github/workflows/wheels.yml", codes=["CUD404"])
    assert codes_at(found) == [("CUD404", 9, 36)]
    assert "cu129" in found[0].message



# CI variables: the step's `env:` over the job's over the workflow's. A value every step that
# would see it sets otherwise is not reported (row 4: both jobs set their own; row 19: both
# steps do), nor a CPU index; `$CUDA_TAG` pieces an index together from the workflow's value
# (row 24), not from the cpu job's own (row 15).
PRECEDENCE_WORKFLOW = """\
name: tests
on: [push, pull_request]
env:
  TORCH_INDEX: https://download.pytorch.org/whl/cu121
  CUDA_TAG: cu118
jobs:
  cpu:
    runs-on: ubuntu-latest
    env:
      TORCH_INDEX: https://download.pytorch.org/whl/cpu
      CUDA_TAG: cpu
    steps:
      - uses: actions/checkout@v4
      - run: pip install torch --index-url $TORCH_INDEX
      - run: pip install torchvision --index-url https://download.pytorch.org/whl/$CUDA_TAG
  wheels:
    runs-on: ubuntu-latest
    env:
      TORCH_INDEX: https://download.pytorch.org/whl/cu124
    steps:
      - run: pip download torch --index-url $TORCH_INDEX -d wheels/
        env:
          TORCH_INDEX: https://download.pytorch.org/whl/cu126
      - run: pip download torchaudio -d wheels/ --index-url https://download.pytorch.org/whl/$CUDA_TAG
        env:
          TORCH_INDEX: https://download.pytorch.org/whl/cpu
"""


def test_github_env_values_at_their_three_levels(tmp_path):
    found = findings(tmp_path, PRECEDENCE_WORKFLOW, name=".github/workflows/tests.yml",
                     codes=["CUD404"])
    assert codes_at(found) == [("CUD404", 23, 24), ("CUD404", 24, 61)]
    messages = {f.location.row: f.message for f in found}
    assert messages[23].startswith("sets the CUDA wheel index `https://download.pytorch.org/"
                                   "whl/cu126`")
    assert "whl/cu118" in messages[24] and "$CUDA_TAG" in messages[24]


# GitLab variables: global ones (also `{value: ..., description: ...}`), a job's over them,
# and only those its `inherit: variables:` keeps. Reported where the index is set (row 29),
# like a GitHub `env:` value, not again where `${WHEEL_INDEX}` uses it; not the global
# TORCH_INDEX (every job sets its own or inherits none of it), not `$WHEEL_INDEX` in docs
# (another job's variable), not `$CUDA_TAG` in lint (inherits none) or docs (its own: cpu).
GITLAB_VARIABLES = """\
stages: [test, build]
variables:
  PIP_CACHE_DIR: "$CI_PROJECT_DIR/.cache/pip"
  TORCH_INDEX:
    value: "https://download.pytorch.org/whl/cu121"
    description: "where pip finds torch"
  CUDA_TAG: cu118
test:cpu:
  stage: test
  image: python:3.11
  variables:
    TORCH_INDEX: "https://download.pytorch.org/whl/cpu"
  before_script:
    - pip install torch --index-url $TORCH_INDEX
  script:
    - pytest -q
lint:
  stage: test
  inherit:
    variables: false
  script:
    - pip install torchvision --index-url https://download.pytorch.org/whl/$CUDA_TAG
    - ruff check .
build:wheels:
  stage: build
  inherit:
    variables: [CUDA_TAG]
  variables:
    WHEEL_INDEX: "https://download.pytorch.org/whl/cu124"
  script:
    - pip download torch --extra-index-url ${WHEEL_INDEX} -d wheels/
    - pip download torchaudio --index-url https://download.pytorch.org/whl/$CUDA_TAG -d wheels/
docs:
  stage: build
  variables:
    TORCH_INDEX: https://download.pytorch.org/whl/cpu
    CUDA_TAG: cpu
  script:
    - pip install torch --index-url https://download.pytorch.org/whl/$CUDA_TAG
    - pip install torch --index-url $TORCH_INDEX --extra-index-url ${WHEEL_INDEX}
"""


def test_gitlab_variables_global_and_of_a_job(tmp_path):
    found = findings(tmp_path, GITLAB_VARIABLES, name=".gitlab-ci.yml", codes=["CUD404"])
    assert codes_at(found) == [("CUD404", 29, 19), ("CUD404", 32, 43)]
    messages = {f.location.row: f.message for f in found}
    assert "whl/cu124" in messages[29] and "whl/cu118" in messages[32]


def test_a_global_gitlab_variable_a_job_sees(tmp_path):
    # the mapping form, reported at its value; the same finding as the GitHub `env:` one
    gitlab = ("variables:\n  TORCH_INDEX:\n"
              "    value: https://download.pytorch.org/whl/cu121\n"
              "    description: the wheel index\n"
              "test:\n  image: python:3.11\n  script:\n"
              "    - pip install torch --index-url $TORCH_INDEX\n")
    github = ("on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    env:\n"
              "      TORCH_INDEX: https://download.pytorch.org/whl/cu121\n    steps:\n"
              "      - run: pip install torch --index-url $TORCH_INDEX\n")
    from_gitlab = findings(tmp_path, gitlab, name=".gitlab-ci.yml", codes=["CUD404"])
    from_github = findings(tmp_path, github, name=".github/workflows/ci.yml", codes=["CUD404"])
    assert codes_at(from_gitlab) == [("CUD404", 3, 12)]
    assert [f.message for f in from_gitlab] == [f.message for f in from_github]


# A multi-stage Dockerfile whose indexes come from ARG defaults and ENV values: each RUN is a
# shell of its own that sees what the build set before it, in its stage.
DOCKERFILE_VARIABLES = """\
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu121
ARG CPU_INDEX=https://download.pytorch.org/whl/cpu
FROM python:3.11-slim AS base
ARG TORCH_INDEX
ENV WHEELS="https://download.pytorch.org/whl/cu124" \\
    PIP_FIND_LINKS=${TORCH_INDEX}
RUN pip install torch --index-url ${TORCH_INDEX}
RUN pip install torchvision --extra-index-url $WHEELS
RUN pip install torch --index-url $CPU_INDEX
RUN echo "using $TORCH_INDEX" && pip install numpy

FROM base AS test
RUN pip install torchaudio --extra-index-url ${WHEELS}

FROM python:3.11-slim AS plain
RUN pip install torch --index-url $WHEELS
ENV PIP_INDEX_URL https://download.pytorch.org/whl/cu118
"""


def test_a_dockerfile_index_kept_in_an_arg_or_env_value(tmp_path):
    found = findings(tmp_path, DOCKERFILE_VARIABLES, name="docker/Dockerfile.gpu",
                     codes=["CUD402"])
    # Row 6: pip's variable set from the stage's ARG (re-declared without a value: the global
    # default); 7: a global ARG re-declared in the stage; 8: an ENV value; 13: a stage built
    # FROM another keeps its ENV; 17: the old `ENV NAME value`. Not row 9 (`$CPU_INDEX` is
    # global and not re-declared in the stage: empty there, and a CPU index anyway), row 10
    # (no pip index), nor row 16 (`$WHEELS` belongs to the other stages).
    assert codes_at(found) == [("CUD402", 6, 5), ("CUD402", 7, 35), ("CUD402", 8, 47),
                               ("CUD402", 13, 46), ("CUD402", 17, 5)]
    messages = {f.location.row: f.message for f in found}
    assert "whl/cu121" in messages[7] and "(the value of `${TORCH_INDEX}`)" in messages[7]
    assert "whl/cu121" in messages[6] and "(the value of `${TORCH_INDEX}`)" in messages[6]
    assert "whl/cu124" in messages[13] and "whl/cu118" in messages[17]
    assert "the value of" not in messages[17]


def test_the_variables_each_dockerfile_instruction_sees():
    from cudalint.formats import dockerfile

    instructions = dockerfile.parse(DOCKERFILE_VARIABLES)
    seen = dict(zip((i.row for i in instructions), dockerfile.variables_at(instructions),
                    strict=True))
    cu121 = "https://download.pytorch.org/whl/cu121"
    # A FROM line reads the ARGs declared before the first FROM, which nothing else reads.
    assert seen[3] == seen[12] == {"TORCH_INDEX": cu121,
                                   "CPU_INDEX": "https://download.pytorch.org/whl/cpu"}
    assert seen[5] == {"TORCH_INDEX": cu121}
    assert seen[7]["PIP_FIND_LINKS"] == cu121 and "CPU_INDEX" not in seen[7]
    assert seen[13] == seen[10] and "WHEELS" in seen[13]  # FROM base: base's values
    assert seen[16] == {}  # a stage from an image starts with none

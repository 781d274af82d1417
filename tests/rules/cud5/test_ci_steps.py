"""The commands of CI steps read as a shell script is (CUD501-CUD504), at the rows inside
the `run:` block; CUD404 still reports the pins they install."""

from __future__ import annotations

from tests.lint import codes_at, findings

WORKFLOW = """\
name: build
on: push
env:
  CUDA_HOME: /usr/local/cuda
jobs:
  build:
    runs-on: ubuntu-22.04
    steps:
      - uses: actions/checkout@v4
      - name: sudo apt-get install -y cuda-toolkit-12-8
        run: |
          # sudo apt-get install -y cuda-toolkit-12-8
          echo "then: sudo apt-get install -y cuda-toolkit-12-8"
          sudo dpkg -i cuda-keyring_1.1-1_all.deb
          sudo apt-get update
          sudo apt-get install -y cuda-toolkit-12-8 \\
              nvidia-gds-12-8
          export CUDA_HOME=/usr/local/cuda-12.8
      - run: nvidia-smi
      - run: >
          docker run --gpus all
          app:latest
"""


def test_a_workflow_s_run_blocks(tmp_path):
    found = findings(tmp_path, WORKFLOW, name=".github/workflows/build.yml",
                     codes=["CUD501", "CUD502", "CUD503", "CUD504"])
    assert codes_at(found) == [
        ("CUD501", 19, 14),
        ("CUD502", 18, 18),
        ("CUD503", 21, 22),
        ("CUD504", 14, 24),
        ("CUD504", 16, 35),
        ("CUD504", 17, 15),
    ]


def test_a_composite_action_and_gitlab_scripts(tmp_path):
    action = ("name: setup-cuda\nruns:\n  using: composite\n  steps:\n"
              "    - run: sudo apt-get install -y cuda-toolkit-12-8\n      shell: bash\n")
    found = findings(tmp_path, action, name=".github/actions/setup-cuda/action.yml",
                     codes=["CUD504"])
    assert codes_at(found) == [("CUD504", 5, 36)]
    gitlab = ("stages: [test]\nvariables:\n  X: nvidia-smi\ntest:\n  script:\n"
              "    - nvidia-smi -L\n    - pytest\n")
    found = findings(tmp_path, gitlab, name=".gitlab-ci.yml", codes=["CUD501"])
    assert codes_at(found) == [("CUD501", 6, 7)]


def test_the_pins_stay_cud404(tmp_path):
    workflow = ("jobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
                "      - run: pip install torch --index-url https://download.pytorch.org/whl/cu121\n")
    found = findings(tmp_path, workflow, name=".github/workflows/ci.yml")
    assert [f.code for f in found] == ["CUD404"]


def test_a_broken_workflow_has_no_commands(tmp_path):
    found = findings(tmp_path, "jobs: [\n", name=".github/workflows/ci.yml",
                     codes=["CUD501", "CUD504"])
    assert [f.code for f in found] == []


def test_a_step_starts_with_its_ci_variables(tmp_path):
    # GitHub `env:` (the step's over the job's over the workflow's) and GitLab `variables:`
    # (a job's over the global ones) are set when the commands run: a tool or package they
    # hold is found where `$NAME` uses it, not where another job, or a nearer level, sets it.
    workflow = """\
on: push
env:
  SMI: nvidia-smi
  CUDA_PACKAGES: cuda-toolkit-12-4 cuda-nvcc-12-4
jobs:
  gpu:
    runs-on: ubuntu-22.04
    steps:
      - run: $SMI --query-gpu=name --format=csv
      - run: sudo apt-get install -y $CUDA_PACKAGES
  cpu:
    runs-on: ubuntu-22.04
    env:
      SMI: "true"
    steps:
      - run: $SMI --query-gpu=name --format=csv
      - run: sudo apt-get install -y $CUDA_PACKAGES
        env:
          CUDA_PACKAGES: libopenblas-dev
"""
    found = findings(tmp_path, workflow, name=".github/workflows/ci.yml",
                     codes=["CUD501", "CUD504"])
    assert codes_at(found) == [("CUD501", 9, 14), ("CUD504", 10, 38)]
    gitlab = """\
variables:
  NVCC: /usr/local/cuda/bin/nvcc
build:
  variables:
    CUDA_PACKAGES:
      value: cuda-toolkit-12-4
  before_script:
    - apt-get install -y $CUDA_PACKAGES
  script:
    - $NVCC --version
test:
  script:
    - apt-get install -y $CUDA_PACKAGES
"""
    found = findings(tmp_path, gitlab, name=".gitlab-ci.yml", codes=["CUD501", "CUD504"])
    assert codes_at(found) == [("CUD501", 10, 7), ("CUD504", 8, 26)]

"""CUD5 details the examples do not show: severities, guards, where findings land."""

from __future__ import annotations

from tests.lint import findings


def _found(tmp_path, source: str, name: str, code: str) -> list[tuple[int, int, str, bool]]:
    return [(f.location.row, f.location.column, str(f.severity), f.guarded)
            for f in findings(tmp_path, source, name=name, codes=[code])]


def test_shell_guards_lower_the_severity(tmp_path):
    script = (
        "if command -v nvidia-smi >/dev/null; then\n"
        "    nvidia-smi -L\n"
        "fi\n"
        "nvidia-smi || echo 'no GPU'\n"
        "nvcc --version\n"
    )
    assert _found(tmp_path, script, "check.sh", "CUD501") == [
        (2, 5, "warning", True), (4, 1, "warning", True), (5, 1, "error", False)]


def test_a_list_after_a_users_setting_is_no_guard(tmp_path):
    # a launcher that counts the GPUs unless the user said how many: the test reads the
    # user's variable, not the driver, in the `&&` form as in the `if` form
    script = (
        "#!/bin/bash\n"
        "# count the GPUs with nvidia-smi unless n_gpu is set\n"
        '[ -z "$n_gpu" ] && n_gpu=$(nvidia-smi -L | wc -l)\n'
        'if [ -z "$n_gpu" ]; then\n'
        "    n_gpu=$(nvidia-smi -L | wc -l)\n"
        "fi\n"
        '[ "${USE_GPU:-0}" = 1 ] && nvidia-smi --query-gpu=name --format=csv\n'
        "! command -v nvcc >/dev/null && nvcc --version\n"
        "command -v nvidia-smi >/dev/null && nvidia-smi -L\n"
        "[ -d /usr/local/cuda ] && nvcc --version\n"
        'echo "using $n_gpu GPUs (nvidia-smi -L)"\n'
    )
    assert _found(tmp_path, script, "launch.sh", "CUD501") == [
        (3, 28, "error", False), (5, 13, "error", False), (7, 28, "error", False),
        (8, 33, "error", False), (9, 37, "warning", True), (10, 27, "warning", True)]


def test_makefile_conditionals_guard(tmp_path):
    makefile = ("ifneq ($(shell which nvcc),)\nkern:\n\tnvcc -o k k.cu\nelse\nkern:\n"
                "\tnvcc --version\nendif\n")
    assert _found(tmp_path, makefile, "Makefile", "CUD501") == [
        (3, 2, "warning", True), (6, 2, "error", False)]


def test_python_environment_severities(tmp_path):
    source = (
        "import os\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n"
        "home = os.environ['CUDA_HOME']\n"
        "path = os.environ.get('CUDA_PATH')\n"
        "os.environ['FORCE_CUDA'] = '1'\n"
        "if os.getenv('FORCE_CUDA') == '1':\n"
        "    pass\n"
    )
    assert _found(tmp_path, source, "build.py", "CUD502") == [
        (2, 12, "info", False), (3, 19, "error", False), (4, 23, "warning", False),
        (5, 12, "error", False)]


def test_notebook_shell_escapes(tmp_path):
    import json

    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["%pip install cupy-cuda12x\n", "!apt-get install -y cuda-toolkit-12-1\n",
                       "!docker run --gpus all nvcr.io/nvidia/pytorch:24.01-py3\n"]}
    text = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    found = findings(tmp_path, text, name="nb.ipynb",
                     codes=["CUD402", "CUD403", "CUD503", "CUD504"])
    assert sorted((f.cell, f.location.row, f.location.column, f.code) for f in found) == [
        (1, 1, 14, "CUD402"), (1, 2, 21, "CUD504"), (1, 3, 13, "CUD503"),
        (1, 3, 24, "CUD403")]


def test_ci_block_scalars_keep_their_rows(tmp_path):
    workflow = (
        "jobs:\n"
        "  t:\n"
        "    runs-on: ubuntu-latest\n"
        "    steps:\n"
        "      - run: >\n"
        "          pip install torch\n"
        "          --index-url https://download.pytorch.org/whl/cu121\n"
        "      - run: pip install cupy-cuda12x\n"
    )
    assert _found(tmp_path, workflow, ".github/workflows/t.yml", "CUD404") == [
        (7, 23, "warning", False), (8, 26, "warning", False)]


def test_nvcc_through_a_variable_or_a_loop_over_candidates(tmp_path):
    """Issue 41: the program's name reaches the call through a variable of the same function
    or a loop over candidate paths; names that hold other programs, and prose, stay silent."""
    source = (
        "import os\n"
        "import subprocess\n"
        "\n"
        "from torch.utils.cpp_extension import CUDA_HOME\n"
        "\n"
        "\n"
        "def nvcc_version(home):\n"
        "    for nvcc in [os.path.join(home, 'bin', 'nvcc'), 'nvcc']:\n"
        "        try:\n"
        "            return subprocess.check_output([nvcc, '--version'])\n"
        "        except OSError:\n"
        "            continue\n"
        "\n"
        "\n"
        "def compile_kernel(src):\n"
        "    nvcc = 'nvcc'\n"
        "    subprocess.run([nvcc, '-V'], check=True)\n"
        "    if CUDA_HOME is not None:\n"
        "        nvcc = os.path.join(CUDA_HOME, 'bin/nvcc')\n"
        "        return subprocess.check_output(f'\"{nvcc}\" -c {src}', shell=True)\n"
        "\n"
        "\n"
        "def train():\n"
        "    tool = 'nvcc'\n"
        "    print(f'run {tool} to build the kernels')\n"
        "    python = 'python3'\n"
        "    subprocess.run([python, 'train.py'])\n"
        "    for name in ['nvcc', 'gcc']:\n"
        "        print(name)\n"
    )
    assert _found(tmp_path, source, "build.py", "CUD501") == [
        (10, 45, "warning", True), (17, 21, "error", False), (20, 40, "warning", True)]


# The same in shell: a variable set before (alone or exported), a loop over candidate paths;
# not a variable set for one command only, a mention, a lookup, another program.
SCRIPT_VARIABLES = """\
#!/bin/bash
NVCC=/usr/local/cuda/bin/nvcc
export SMI=nvidia-smi
"${NVCC}" --version
watch -n 5 $SMI
for tool in /usr/bin/nvidia-smi nvidia-smi; do
    "$tool" --query-gpu=name --format=csv
done
for tool in nvidia-smi nvcc; do command -v "$tool"; echo "$tool"; done
for f in *.cu; do gcc "$f"; done
$PYTHON train.py
CC=gcc $CC main.c
echo "$SMI is the driver's tool"
"$tool" -L
"""


def test_tools_through_a_shell_variable_or_a_loop_over_candidates(tmp_path):
    found = findings(tmp_path, SCRIPT_VARIABLES, name="scripts/build.sh", codes=["CUD501"])
    assert sorted((f.location.row, f.location.column) for f in found) == [(4, 1), (5, 12),
                                                                          (7, 5)]
    messages = {f.location.row: f.message for f in found}
    assert messages[4].startswith("`nvcc` is the CUDA compiler")
    assert messages[4].endswith("(the value of `${NVCC}`)")
    assert messages[5].endswith("(the value of `$SMI`)") and "nvidia-smi" in messages[7]
    assert all(str(f.severity) == "error" for f in found)


def test_tools_through_a_dockerfile_arg_or_env(tmp_path):
    """Each RUN sees the ARG defaults and ENV values before it in its stage (the same
    variables CUD402 reads), and what that RUN itself set before."""
    dockerfile = ("ARG CUDA=/usr/local/cuda\n"
                  "FROM python:3.11 AS build\n"
                  "ARG CUDA\n"
                  "ENV NVCC=$CUDA/bin/nvcc\n"
                  "RUN $NVCC --version\n"
                  "RUN SMI=nvidia-smi && $SMI -L\n"
                  "RUN $SMI -L\n"  # another RUN: another shell
                  "FROM python:3.11\n"
                  "RUN $NVCC --version\n")  # another stage
    found = findings(tmp_path, dockerfile, name="Dockerfile", codes=["CUD501"])
    assert sorted((f.location.row, f.location.column) for f in found) == [(5, 5), (6, 23)]


def test_installs_and_scheduling_through_a_variable(tmp_path):
    """CUD504 and CUD503 read the same variables: a package list a variable holds is one
    finding at the variable, naming its CUDA packages; a value the script cannot know is
    left alone."""
    script = ("#!/bin/bash\n"
              'PKGS="cuda-nvcc-12-1 git libcudnn8"\n'
              "sudo apt-get install -y $PKGS\n"
              "CUDA_MOD=cuda/12.1\n"
              "module load $CUDA_MOD\n"
              'GPUS="--gpus=2"\n'
              "srun $GPUS python train.py\n"
              "apt-get install -y $EXTRA_PACKAGES\n"  # set by the caller: unknown
              "TOOLS=git\n"
              "apt-get install -y $TOOLS\n")
    found = findings(tmp_path, script, name="setup_cluster.sh", codes=["CUD503", "CUD504"])
    assert sorted((f.code, f.location.row, f.location.column, f.message.split("`")[1])
                  for f in found) == [
        ("CUD503", 5, 13, "module load cuda/12.1"), ("CUD503", 7, 6, "--gpus=2"),
        ("CUD504", 3, 25, "cuda-nvcc-12-1")]
    assert all("(the value of `$" in f.message for f in found)
    install = next(f for f in found if f.code == "CUD504")
    assert install.message.startswith("installs `cuda-nvcc-12-1`, `libcudnn8` (the value of "
                                      "`$PKGS`): ")

"""CUD504: scripts that install the CUDA toolkit or the NVIDIA driver."""

from __future__ import annotations

import fnmatch
import itertools
import re
from collections.abc import Iterator, Sequence

from cudalint.engine.contract import FileRule, Invalid, Valid
from cudalint.finding import Finding
from cudalint.formats import scripts
from cudalint.formats.installers import conda_install, pip_install
from cudalint.formats.shell import Command, Word, basename, program, with_variables
from cudalint.kinds import SourceFile

_PACKAGE_MANAGERS = frozenset({"apt-get", "apt", "aptitude", "yum", "dnf", "microdnf",
                               "zypper", "apk"})
_INSTALL = frozenset({"install", "add", "reinstall"})
# Options of the system package managers that take a value (`-o Dpkg::Options::=...`).
_VALUE_OPTIONS = frozenset({"-o", "--option", "-t", "--target-release", "-c", "--config-file",
                            "--repo", "--enablerepo", "--disablerepo", "--releasever",
                            "--setopt", "--installroot", "-R", "--root", "-X", "--repository"})
# The toolkit as conda packages (`conda install -c nvidia cuda-toolkit`) and pip wheels
# (`pip install nvidia-cuda-nvcc-cu12`).
_CONDA_TOOLKIT = ("cuda", "cuda-toolkit*", "cudatoolkit*", "cuda-nvcc*", "cuda-runtime*",
                  "cuda-libraries*", "cuda-cudart*", "cudnn*")
_PIP_TOOLKIT = ("nvidia-*-cu1[0-9]*",)
_CUDA_PACKAGES = (
    "cuda", "cuda-*", "nvidia-*", "libnvidia-*", "libcudnn*", "libnccl*", "libcublas*",
    "libcufft*", "libcurand*", "libcusparse*", "libcusolver*", "libnvinfer*", "libnvjitlink*",
    "tensorrt*", "cudnn*", "datacenter-gpu-manager", "xserver-xorg-video-nvidia*",
)
_INSTALLER_FILES = ("cuda_*.run", "cuda-*.run", "nvidia-linux-*.run", "cudnn*.run",
                    "cuda-keyring*.deb", "cuda-repo-*", "nvidia-*.deb", "libcudnn*.deb")
_NVIDIA_REPOSITORY = re.compile(r"developer\.download\.nvidia\.com/compute/cuda", re.IGNORECASE)


def _is_cuda_package(name: str, globs: tuple[str, ...] = _CUDA_PACKAGES) -> bool:
    name = re.split(r"[=:<>~!\[ ]", name.rpartition("::")[2], maxsplit=1)[0].lower()
    return any(fnmatch.fnmatchcase(name, glob) for glob in globs)


def _operands(argv: Sequence[Word]) -> list[Word]:
    """The words of a package manager's command line that are not options (or their
    values): `apt-get -y -q install cuda` -> [install, cuda]."""
    operands: list[Word] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word.value.startswith("-"):
            skip = word.value in _VALUE_OPTIONS
        else:
            operands.append(word)
    return operands


def _package_installs(argv: Sequence[Word]) -> Iterator[Word]:
    """CUDA packages installed by apt/yum/dnf/..., conda or pip, options anywhere."""
    conda = conda_install(argv)
    pip = pip_install(argv) if conda is None else None
    if conda is not None or pip is not None:
        globs = _CONDA_TOOLKIT if conda is not None else _PIP_TOOLKIT
        for option, word in conda or pip or ():
            if option is None and _is_cuda_package(word.value, globs):
                yield word
        return
    if basename(argv[0]) not in _PACKAGE_MANAGERS:
        return
    operands = _operands(argv[1:])
    if not operands or operands[0].value not in _INSTALL:
        return
    for word in operands[1:]:
        if _is_cuda_package(basename(word)) or _is_installer_file(word):
            yield word


def _is_installer_file(word: Word) -> bool:
    return any(fnmatch.fnmatchcase(basename(word).lower(), glob) for glob in _INSTALLER_FILES)


def install_words(command: Command) -> Iterator[Word]:
    """The CUDA toolkit or driver packages, installers and repositories a command installs."""
    argv = program(command)
    if not argv:
        return
    tool = basename(argv[0])
    if _is_installer_file(argv[0]):
        yield argv[0]  # ./cuda_12.1.0_530.30.02_linux.run
    elif tool in ("sh", "bash") and len(argv) > 1 and _is_installer_file(argv[1]):
        yield argv[1]
    elif tool in ("dpkg", "rpm") and any(w.value in ("-i", "--install", "-U", "-ivh")
                                          for w in argv[1:]):
        yield from (word for word in argv[1:] if _is_installer_file(word))
    elif tool in ("add-apt-repository", "yum-config-manager") or (
        tool == "dnf" and any(w.value == "config-manager" for w in argv)
    ):
        yield from (word for word in argv[1:] if _NVIDIA_REPOSITORY.search(word.value))
    else:
        yield from _package_installs(argv)


class CudaToolkitInstall(FileRule):
    """
    ## What it does
    Finds scripts that install the CUDA toolkit or the NVIDIA driver: `apt-get install`
    (also apt, yum, dnf, zypper, apk, with options anywhere: `apt-get --yes install`,
    `yum -y install`) of `cuda-*`, `nvidia-*`, `libcudnn*`, `libnccl*`, TensorRT and the
    other NVIDIA packages; the toolkit from conda (`conda install -c nvidia cuda-toolkit`,
    `cudatoolkit`) or as pip wheels (`pip install nvidia-cuda-nvcc-cu12`); the `cuda-keyring`
    package and NVIDIA's repositories; CUDA and driver `.run` installers
    (`sh cuda_12.1.0_..._linux.run`). Read in shell scripts, Makefile recipes, Dockerfile
    `RUN`, CI steps (each `run:` of a GitHub workflow or composite action, GitLab
    `script:` lines, at the row inside the block) and notebooks (`!apt-get install ...`),
    also where a variable set before holds the packages (`PKGS="cuda-nvcc-12-1 libcudnn8"`
    then `apt-get install -y $PKGS`; a Dockerfile's `ARG` and `ENV` values).
    The conda and pip packages are also pins (CUD401, CUD402), in environment and
    requirements files too.

    ## Why is this bad?
    There is no CUDA toolkit or NVIDIA driver for macOS; on a Mac the script stops there,
    and an image built this way is CUDA-only. Severity: error.

    ## Example
    ```bash
    wget https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/cuda-keyring_1.1-1_all.deb
    dpkg -i cuda-keyring_1.1-1_all.deb
    apt-get install -y cuda-toolkit-12-1
    ```

    ## Use instead
    Install the toolkit only on Linux machines with an NVIDIA GPU (`if [ "$(uname)" =
    Linux ] && command -v nvidia-smi; then ... fi`), or start from a CUDA base image on the
    GPU servers only. A `# noqa: CUD504` comment on the line suppresses it.
    """

    code = "CUD504"
    name = "cuda-toolkit-install"
    message = "installs the CUDA toolkit or NVIDIA driver"
    file_kinds = scripts.SHELL_RULE_KINDS
    VALID = (
        Valid("apt-get install -y build-essential git\n"
              "wget https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/"
              "x86_64/cuda-keyring_1.1-1_all.deb\necho 'apt-get install cuda'\n",
              path="setup.sh"),
        Valid("apt-get -o Acquire::Retries=3 install -y git\nyum -y install gcc\n"
              "conda install -c conda-forge numpy\npip install nvidia-ml-py torch\n"
              "apt-get -y remove cuda-toolkit-12-1\n", path="setup.sh"),
        Valid("FROM python:3.11\nRUN apt-get update && apt-get install -y libgl1\n",
              path="Dockerfile"),
        Valid("jobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
              "      - name: apt-get install -y cuda-toolkit-12-8\n"
              "        run: |\n          sudo apt-get install -y libgl1\n"
              "          echo 'apt-get install -y cuda-toolkit-12-8'\n",
              path=".github/workflows/ci.yml"),
    )
    INVALID = (
        Invalid("dpkg -i cuda-keyring_1.1-1_all.deb\napt-get update\n"
                "sudo apt-get install -y --no-install-recommends cuda-toolkit-12-1 \\\n"
                "    libcudnn8=8.9.7.29-1+cuda12.2 nvidia-driver-535\n",
                path="scripts/setup_env.sh", count=4),
        Invalid("sh cuda_12.1.0_530.30.02_linux.run --silent --toolkit\n", path="install.sh"),
        Invalid("FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y cuda-nvcc-12-1\n",
                path="Dockerfile"),
        Invalid("apt-get --yes install cuda-toolkit-12-4\napt-get -y -q install cuda-nvcc-12-4\n"
                "apt install -y nvidia-driver-535\ndnf install -y cuda-toolkit\n"
                "yum -y install cuda\n", path="install.sh", count=5),
        Invalid("conda install -y -c nvidia cuda-toolkit=12.1\nmamba install nvidia::cuda-nvcc\n",
                path="install.sh", count=2),
        Invalid("pip install nvidia-cudnn-cu12 nvidia-cuda-nvcc-cu12==12.1.105 numpy\n",
                path="install.sh", count=2),
        Invalid("jobs:\n  build:\n    runs-on: ubuntu-22.04\n    steps:\n"
                "      - name: Install CUDA\n        run: |\n"
                "          sudo dpkg -i cuda-keyring_1.1-1_all.deb\n"
                "          sudo apt-get update\n"
                "          sudo apt-get install -y cuda-toolkit-12-8 nvidia-gds-12-8\n",
                path=".github/workflows/build.yml", count=3),
        Invalid("name: setup-cuda\nruns:\n  using: composite\n  steps:\n"
                "    - run: sudo apt-get -y install cuda-toolkit-12-8\n      shell: bash\n",
                path=".github/actions/setup-cuda/action.yml"),
    )

    def check(self, source: SourceFile) -> Iterator[Finding]:
        for commands, variables in scripts.scripts_of(source):
            for command, known in with_variables(commands, variables):
                command = command.expanded(known)
                # One finding per word of the script: a variable holding several packages
                # (`apt-get install -y $CUDA_PACKAGES`) names them all.
                for _, group in itertools.groupby(install_words(command),
                                                  key=lambda word: word.start):
                    words = list(group)
                    names = ", ".join(f"`{word.value}`" for word in words)
                    row, column = command.position(words[0])
                    yield self.finding(source, row, column, guarded=command.guarded,
                                       message=f"installs {names}"
                                       f"{command.value_note(words[0])}: there is no CUDA "
                                       "toolkit or NVIDIA driver for macOS; install it on the "
                                       "Linux GPU machines only")

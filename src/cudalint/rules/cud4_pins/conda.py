"""CUD401: conda pins that need CUDA, in environment files and in `conda install` commands."""

from __future__ import annotations

from collections.abc import Iterator

from yaml.nodes import Node

from cudalint.engine.contract import FileRule, Invalid, Valid
from cudalint.finding import Finding, Severity
from cudalint.formats import scripts, yaml_lines
from cudalint.formats.installers import conda_install
from cudalint.formats.requirements import parse_line
from cudalint.formats.shell import Command, Word, program
from cudalint.kinds import FileKind, SourceFile
from cudalint.rules.cud4_pins.cuda_pins import (
    Problem,
    channel_problem,
    conda_problem,
    finding,
)
from cudalint.rules.cud4_pins.pip import line_problem

_ENV = "environment.yml"


def conda_command(command: Command) -> Iterator[tuple[Word, Problem]]:
    """The CUDA pins of a `conda`/`mamba` install or create command."""
    for option, word in conda_install(program(command)) or ():
        if option == "--channel":
            problem = channel_problem(word.value)
        elif option is None:
            problem = conda_problem(word.value)
        else:
            continue
        if problem is not None:
            yield word, problem


class CondaCudaPin(FileRule):
    """
    ## What it does
    Finds conda pins that need CUDA: `cudatoolkit`, `cuda-toolkit` and the other `cuda-*`
    packages, `pytorch-cuda`, `cudnn`, `nccl`, `magma-cuda*`, `pytorch-gpu`, CUDA build
    strings (`pytorch=2.1=*cuda*`), packages from the `nvidia` channel (`nvidia::cuda-nvcc`),
    the `nvidia` channel itself (a warning), CUDA-only packages from the shared table
    (`cupy`, ...) and, under `pip:`, the pip pins CUD402 finds (CUDA wheels, `+cu121`
    versions, CUDA wheel indexes, CUDA-only packages named by their repository's or wheel
    file's URL). Read in conda environment files, found by their content whatever their name
    (`environment*.yml`, `conda*.yml`, `env.yml`, `<project>_env.yaml`: top-level
    `dependencies:` with `channels:` or `name:`, and no key conda does not know), and in
    `conda`/`mamba`/`micromamba install|create` commands of shell scripts, Makefiles,
    Dockerfiles and notebooks (`%conda install`).

    ## Why is this bad?
    conda has no macOS build of the CUDA stack, so the environment does not solve on a Mac
    at all. Severity: error (a warning for the channel alone, and for packages that partly
    work off CUDA).

    ## Example
    ```yaml
    channels: [pytorch, nvidia, conda-forge]
    dependencies:
      - pytorch=2.1
      - pytorch-cuda=12.1
      - pip:
          - cupy-cuda12x
    ```

    ## Use instead
    ```yaml
    channels: [conda-forge]
    dependencies:
      - pytorch=2.1
    ```
    with the CUDA pins in a separate `environment-cuda.yml` for the Linux servers. A
    `# noqa: CUD401` comment on the line suppresses a finding.
    """

    code = "CUD401"
    name = "conda-cuda-pin"
    site_severities = (Severity.WARNING,)
    message = "conda pin that needs CUDA"
    file_kinds = frozenset({FileKind.CONDA, *scripts.SCRIPT_RULE_KINDS})
    VALID = (
        Valid("name: x\nchannels: [conda-forge]\ndependencies:\n  - pytorch=2.1\n"
              "  - numpy\n  - pip:\n    - torch==2.1.0\n", path=_ENV),
        Valid("# cudatoolkit is not needed on a Mac\ndependencies: [python=3.11]\n", path=_ENV),
        Valid("conda install -c conda-forge pytorch numpy\necho 'conda install cudatoolkit'\n",
              path="setup.sh"),
        Valid("", path=_ENV),
    )
    INVALID = (
        Invalid("channels:\n  - pytorch\n  - nvidia\ndependencies:\n  - pytorch=2.1\n"
                "  - pytorch-cuda=12.1\n  - cudatoolkit=11.8  # noqa: E501\n", path=_ENV,
                count=3),
        Invalid("dependencies:\n  - nvidia::cuda-nvcc\n  - pytorch=2.1=*cuda*\n", path=_ENV,
                count=2),
        Invalid("dependencies:\n  - pip:\n      - cupy-cuda12x\n"
                "      - --extra-index-url https://download.pytorch.org/whl/cu121\n",
                path="environment-gpu.yaml", count=2),
        Invalid("dependencies:\n  - tensorflow-gpu\n  - cupy-cuda12x\n  - pip:\n"
                "      - paddlepaddle-gpu\n", path=_ENV, count=3),
        Invalid("dependencies:\n  - python=3.10\n  - pip:\n"
                "      - git+https://github.com/openai/CLIP.git\n"
                "      - git+https://github.com/NVlabs/tiny-cuda-nn/#subdirectory=bindings/torch\n",
                path=_ENV),
        Invalid("conda install -y -c nvidia cuda-toolkit=12.1 magma-cuda121\n",
                path="scripts/setup_env.sh", count=3),
        Invalid("FROM continuumio/miniconda3\nRUN conda install -y cudatoolkit=11.8\n",
                path="Dockerfile"),
    )

    def check(self, source: SourceFile) -> Iterator[Finding]:
        if source.kind is FileKind.CONDA:
            yield from self._environment(source)
            return
        for command in scripts.commands(source):
            for word, problem in conda_command(command):
                yield finding(self, source, command.position(word), problem,
                              guarded=command.guarded)

    def _environment(self, source: SourceFile) -> Iterator[Finding]:
        parsed = yaml_lines.read(source)
        if isinstance(parsed, Finding):
            yield parsed
            return
        for document in parsed:
            for node in yaml_lines.entries(yaml_lines.get(document, "channels")):
                problem = channel_problem(yaml_lines.scalar(node) or "")
                if problem is not None:
                    yield finding(self, source, yaml_lines.value_start(node), problem)
            for node in yaml_lines.entries(yaml_lines.get(document, "dependencies")):
                yield from self._dependency(source, node)

    def _dependency(self, source: SourceFile, node: Node) -> Iterator[Finding]:
        spec = yaml_lines.scalar(node)
        if spec is not None:
            problem = conda_problem(spec)
            if problem is not None:
                yield finding(self, source, yaml_lines.value_start(node), problem)
            return
        for entry in yaml_lines.entries(yaml_lines.get(node, "pip")):
            text = yaml_lines.scalar(entry)
            if text is None:
                continue
            row, column = yaml_lines.value_start(entry)
            line = parse_line(row, column, text.strip())
            problem = line_problem(line)
            if problem is not None:
                where = (row, line.value_column) if line.option else (row, column)
                yield finding(self, source, where, problem)

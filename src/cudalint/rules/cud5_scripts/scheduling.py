"""CUD503: GPU scheduling: Slurm/PBS/LSF/SGE GPU requests, `docker run --gpus`, and
`module load cuda`."""

from __future__ import annotations

import re
from collections.abc import Iterator

from cudalint.engine.contract import FileRule, Invalid, Valid
from cudalint.finding import Finding, Severity
from cudalint.formats import scripts
from cudalint.formats.shell import Command, Word, basename, program, with_variables
from cudalint.kinds import FileKind, SourceFile

_DIRECTIVE = re.compile(r"^\s*#(SBATCH|PBS|BSUB|\$)\s+(.*)$")
# A GPU request in a scheduler option: `--gres=gpu:2`, `--gpus-per-node=4`, `-G 1`,
# `--partition=gpu`, PBS `-l select=1:ngpus=1`, LSF `-gpu "num=1"`, SGE `-l gpu=1`.
_GPU_OPTION = re.compile(
    r"(?:^|\s)(?P<option>--gres[=\s]+\S*gpu\S*|--gpus\S*|-G\s*\d+|--gpu-\S+|"
    r"(?:--partition|-p)[=\s]+\S*gpu\S*|-l\s+\S*gpus?\S*|-gpu\b)", re.IGNORECASE,
)
_SCHEDULERS = frozenset({"srun", "sbatch", "salloc", "qsub", "bsub"})
_CONTAINER_RUN = frozenset({"docker", "podman", "nerdctl"})
_MODULE_TOOLS = frozenset({"module", "ml", "spack"})
_CUDA_MODULE = re.compile(r"(?:cuda|cudnn|nccl|nvhpc|tensorrt)\b", re.IGNORECASE)
_SCHEDULER_MESSAGE = ("`{}` asks the scheduler for an NVIDIA GPU; a Mac runs the job "
                      "without one (guard the request, or keep a CPU/MPS path)")


class GpuScheduling(FileRule):
    """
    ## What it does
    Finds GPU scheduling: `#SBATCH --gres=gpu...`, `#SBATCH --gpus*` and GPU partitions,
    PBS `#PBS -l ...ngpus=`, LSF `#BSUB -gpu`, SGE `#$ -l gpu=`; the same options on
    `srun`/`sbatch`/`salloc`/`qsub`/`bsub` command lines; `docker run --gpus`; and
    `module load cuda` (also `cudnn`, `nccl`, `nvhpc`; `ml`, `spack load`). Commands are
    read in shell scripts, Makefile recipes, Dockerfile `RUN`, CI `run:`/`script:` steps and
    notebooks, with the variables set before them (`CUDA_MOD=cuda/12.1` then `module load
    $CUDA_MOD`).

    ## Why is this bad?
    The job assumes an NVIDIA GPU and a cluster's CUDA modules. Run on a Mac, the directives
    are ignored (a warning) but `module` does not exist and `docker run --gpus` fails with
    "could not select device driver" (an error).

    ## Example
    ```bash
    #SBATCH --gres=gpu:4
    module load cuda/12.1
    ```

    ## Use instead
    Keep the cluster submission script apart from a portable entry point (`python train.py`)
    that picks its device in code. A `# noqa: CUD503` comment on the line suppresses it.
    """

    code = "CUD503"
    name = "gpu-scheduling"
    message = "GPU scheduling"
    severity = Severity.WARNING
    site_severities = (Severity.ERROR,)
    file_kinds = scripts.SHELL_RULE_KINDS
    VALID = (
        Valid("#!/bin/bash\n#SBATCH --cpus-per-task=8\n#SBATCH --mem=32G\nmodule load python\n"
              "echo 'use --gres=gpu:1 on the cluster'\n", path="train.slurm"),
        Valid("docker run --rm -it python:3.11 python -V\n", path="run.sh"),
        Valid("jobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
              "      - name: docker run --gpus all\n        run: docker run --rm app pytest\n",
              path=".github/workflows/ci.yml"),
    )
    INVALID = (
        Invalid("#!/bin/bash\n#SBATCH --gres=gpu:a100:4\n#SBATCH --gpus-per-task=1\n"
                "#SBATCH --partition=gpu\nmodule load cuda/12.1 cudnn/8.9\n",
                path="scripts/train.slurm", count=5),
        Invalid("#PBS -l select=1:ncpus=8:ngpus=1\n", path="job.pbs"),
        Invalid("srun --gpus=2 python train.py\ndocker run --gpus all -it app\n",
                path="run.sh", count=2),
        Invalid("name: setup\nruns:\n  using: composite\n  steps:\n"
                "    - run: docker run --gpus all app:latest pytest\n      shell: bash\n",
                path=".github/actions/gpu-test/action.yml"),
    )

    def check(self, source: SourceFile) -> Iterator[Finding]:
        if source.kind is FileKind.SHELL:
            yield from self._directives(source)
        for commands, variables in scripts.scripts_of(source):
            for command, known in with_variables(commands, variables):
                yield from self._command(source, command.expanded(known))

    def _directives(self, source: SourceFile) -> Iterator[Finding]:
        for row, line in enumerate(source.lines, start=1):
            directive = _DIRECTIVE.match(line)
            if directive is None:
                continue
            for option in _GPU_OPTION.finditer(directive.group(2)):
                column = directive.start(2) + option.start("option") + 1
                yield self.finding(source, row, column, message=_SCHEDULER_MESSAGE.format(
                    option.group("option").strip()))

    def _command(self, source: SourceFile, command: Command) -> Iterator[Finding]:
        argv = program(command)
        if not argv:
            return
        tool = basename(argv[0])
        if tool in _SCHEDULERS:
            for word in _gpu_words(argv[1:]):
                yield self._at(source, command, word, _SCHEDULER_MESSAGE.format(word.value))
        elif tool in _CONTAINER_RUN and len(argv) > 1 and argv[1].value in ("run", "create"):
            for word in argv[2:]:
                if word.value == "--gpus" or word.value.startswith("--gpus="):
                    yield self._at(source, command, word, "`docker run --gpus` needs the "
                                   "NVIDIA container runtime; Docker on a Mac has no GPU to "
                                   "give", Severity.ERROR)
        elif tool in _MODULE_TOOLS and len(argv) > 2 and argv[1].value in ("load", "add"):
            for word in argv[2:]:
                if _CUDA_MODULE.match(word.value):
                    yield self._at(source, command, word, f"`module load {word.value}` loads "
                                   "a cluster's CUDA stack; a Mac has no module system or "
                                   "CUDA")
        elif tool == "ml" and len(argv) > 1 and _CUDA_MODULE.match(argv[1].value):
            yield self._at(source, command, argv[1], f"`ml {argv[1].value}` loads a "
                           "cluster's CUDA stack; a Mac has no module system or CUDA")

    def _at(self, source: SourceFile, command: Command, word: Word, message: str,
            severity: Severity | None = None) -> Finding:
        row, column = command.position(word)
        return self.finding(source, row, column, message=message + command.value_note(word),
                            severity=severity, guarded=command.guarded)


def _gpu_words(words: tuple[Word, ...]) -> Iterator[Word]:
    for word, following in zip(words, [*words[1:], None], strict=False):
        text = word.value if following is None else f"{word.value} {following.value}"
        match = _GPU_OPTION.match(text)
        if match and match.start("option") == 0:
            yield word

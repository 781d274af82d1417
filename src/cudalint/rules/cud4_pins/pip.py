"""CUD402: pip pins that need CUDA: requirements files, pyproject.toml, setup.cfg and
`pip install` commands (setup.py is read by `setup_py.py`, under the same code)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace

from cudalint.engine.contract import FileRule, Invalid, Valid
from cudalint.finding import Finding, Severity, error_finding
from cudalint.formats import FormatError, dockerfile, scripts
from cudalint.formats.installers import pip_install
from cudalint.formats.requirements import Line, read_lines
from cudalint.formats.shell import (
    Command,
    Word,
    assigned,
    expand,
    program,
    value_note,
    with_variables,
)
from cudalint.kinds import FileKind, SourceFile
from cudalint.rules.cud4_pins import project_files
from cudalint.rules.cud4_pins.cuda_pins import (
    Problem,
    finding,
    index_problem,
    requirement_problem,
    url_problem,
)

INDEX_OPTIONS = frozenset({"--index-url", "--extra-index-url", "--find-links", "--index",
                           "--default-index"})
# Environment variables pip and uv read their indexes from.
_INDEX_VARIABLES = {
    "PIP_INDEX_URL": "--index-url",
    "PIP_EXTRA_INDEX_URL": "--extra-index-url",
    "PIP_FIND_LINKS": "--find-links",
    "UV_INDEX_URL": "--index-url",
    "UV_DEFAULT_INDEX": "--index-url",
    "UV_EXTRA_INDEX_URL": "--extra-index-url",
    "UV_INDEX": "--extra-index-url",
}


def _name(requirement: str) -> str:
    """The distribution a requirement line names (`nvidia-cudnn-cu12==9.1.0.70 ; ...`)."""
    return re.split(r"[\s;=<>!~\[@(]", requirement, maxsplit=1)[0]


def line_problem(line: Line) -> Problem | None:
    """A requirements-file line (also a `pip:` entry of an environment file)."""
    if line.option is None:
        return requirement_problem(line.text)
    return argument_problem(line.option, line.value)


def argument_problem(option: str | None, value: str) -> Problem | None:
    if option is None:
        return requirement_problem(value)
    if option == "--index-url" or option == "--default-index":
        return index_problem("--index-url", value)
    if option in INDEX_OPTIONS:
        return index_problem(option, value)
    if option == "--editable":
        return url_problem(value)
    if option == "--torch-backend" and value.lower().startswith("cu"):
        return Problem(f"`--torch-backend={value}` installs CUDA builds of torch; `auto` "
                       "picks the right build on each machine")
    return None


_FETCHING = ("install", "download", "wheel")  # pip commands that read the indexes


def pip_command(command: Command, variables: Mapping[str, str] | None = None,
                ) -> Iterator[tuple[Word, Problem]]:
    """The CUDA pins of a `pip install`/`download` (or uv) command, and of pip's index
    variables; `$NAME` in them read from `variables` (what was set before it runs)."""
    variables = {} if variables is None else variables
    for option, word in pip_install(program(command), _FETCHING) or ():
        problem = argument_problem(option, expand(word.value, variables))
        if problem is not None:
            yield word, _valued(problem, word.value, variables)
    for word in assigned(command):
        name, _, value = word.value.partition("=")
        yield from ((word, problem) for problem in _index_variable(name, value, variables))


def pip_commands(commands: Iterable[Command], variables: Mapping[str, str] | None = None,
                 ) -> Iterator[tuple[Command, Word, Problem]]:
    """`pip_command` over a script's commands in order, following the shell variables it
    sets (`TORCH_INDEX=.../whl/cu129` then `pip download --index-url $TORCH_INDEX torch`);
    `variables`: those set before it runs (a Dockerfile's `ARG` and `ENV`)."""
    for command, known in with_variables(commands, variables):
        for word, problem in pip_command(command, known):
            yield command, word, problem


def _index_variable(name: str, value: str, variables: Mapping[str, str]) -> Iterator[Problem]:
    """The problem of setting pip's or uv's index variable `name` to `value`, if any."""
    if name in _INDEX_VARIABLES and (problem := index_problem(
            _INDEX_VARIABLES[name], expand(value, variables))):
        yield _valued(problem, value, variables)


def _valued(problem: Problem, text: str, variables: Mapping[str, str]) -> Problem:
    """`problem`, found in the value of `text`: its message says so where that differs."""
    note = value_note(text, expand(text, variables))
    return replace(problem, message=problem.message + note) if note else problem


class PipCudaPin(FileRule):
    """
    ## What it does
    Finds pip pins that need CUDA:
    - CUDA wheel indexes (`--index-url https://download.pytorch.org/whl/cu121`, NVIDIA's
      index, `-f https://data.pyg.org/whl/torch-2.1.0+cu121.html`; also pip's and uv's
      index environment variables),
    - CUDA builds by local version (`torch==2.1.0+cu121`, `torch-scatter==2.1.2+pt21cu121`),
      CUDA wheel files by URL,
    - CUDA-only packages named by URL: their repository
      (`git+https://github.com/NVlabs/tiny-cuda-nn/#subdirectory=bindings/torch`,
      `git+https://github.com/Dao-AILab/flash-attention`) or a wheel file of theirs
      (`https://.../flash_attn-2.5.8+cu122torch2.3-cp310-cp310-linux_x86_64.whl`),
    - CUDA-only packages from the shared table (`cupy-cuda12x`, `nvidia-*-cu12`, `flash-attn`,
      `xformers`, `triton`, `onnxruntime-gpu`, `faiss-gpu`, ...), each message naming the
      portable alternative, and CUDA extras (`jax[cuda12]`, `tensorflow[and-cuda]`).

    Read in `requirements*.txt`/`*.in`, `constraints*.txt` and `requirements/*.txt` (each
    file on its own: `-r`/`-c` includes are not followed, since every requirements file in
    the tree is checked anyway); in pyproject.toml (`[project]` dependencies and
    optional-dependencies, `[dependency-groups]`, `[build-system]`, `[[tool.uv.index]]`,
    `[tool.uv.sources]`, poetry sources and dependencies); in setup.cfg and setup.py
    (`install_requires`, `extras_require`, read without running setup.py); and in `pip
    install`/`pip download`/`pip wheel`/`uv pip install`/`uv add` commands of scripts,
    Dockerfiles and notebooks, also where a shell variable the script set before holds the
    index (`TORCH_INDEX=.../whl/cu129` then `pip download --index-url $TORCH_INDEX torch`),
    or, in a Dockerfile, an `ARG` default or `ENV` value of the stage set before the `RUN`
    (`ARG TORCH_INDEX=.../whl/cu121`, also declared before the first `FROM` and again, without
    a value, in the stage).

    `torch==2.1.0` without a CUDA marker is not reported, nor is a `cpu` index. A pin in an
    optional extra or dependency group is guarded (one severity lower). A pin whose marker
    keeps it off macOS (`triton; sys_platform == "linux"`,
    `nvidia-cudnn-cu12==9.1.0.70 ; platform_machine == 'x86_64' and sys_platform == 'linux'`)
    is skipped by pip on a Mac: it is info, and a requirements file (a pip-compile or
    `uv export` lock) with several such lines gets one finding for all of them, at the first,
    with their count.

    ## Why is this bad?
    These pins resolve to Linux CUDA wheels. On a Mac the install fails (there is no
    `cupy-cuda12x` or `torch==2.1.0+cu121` wheel for macOS) or, with an extra CUDA index,
    silently differs from the Linux install. Severity: error; warning for an extra index
    and for packages that partly work off CUDA.

    ## Example
    ```text
    --extra-index-url https://download.pytorch.org/whl/cu121
    torch==2.1.0+cu121
    flash-attn==2.5.6
    ```

    ## Use instead
    ```text
    torch==2.1.0
    flash-attn==2.5.6; sys_platform == "linux"
    ```
    and `torch.nn.functional.scaled_dot_product_attention` where flash-attn is missing. A
    `# noqa: CUD402` comment on the line suppresses a finding.
    """

    code = "CUD402"
    name = "pip-cuda-pin"
    site_severities = (Severity.WARNING, Severity.INFO)
    message = "pip pin that needs CUDA"
    file_kinds = frozenset({FileKind.REQUIREMENTS, FileKind.PYPROJECT, FileKind.SETUP_CFG,
                            *scripts.SCRIPT_RULE_KINDS})
    VALID = (
        Valid("torch==2.3.0\nnumpy>=1.24  # the cuda build is not needed\n",
              path="requirements.txt"),
        Valid("--index-url https://download.pytorch.org/whl/cpu\ntorch\n",
              path="requirements-cpu.txt"),
        Valid("[project]\nname = 'x'\ndependencies = ['torch>=2.1', 'numpy']\n",
              path="pyproject.toml"),
        Valid("echo 'pip install cupy-cuda12x'\npip install -r requirements.txt\n",
              path="setup.sh"),
        Valid("", path="requirements.txt"),
        Valid("tensorflow==2.16\npaddlepaddle\nfaiss-cpu\nonnxruntime\njax\n",
              path="requirements.txt"),
        Valid("git+https://github.com/huggingface/transformers\n"
              "git+https://github.com/openai/CLIP.git@main#egg=clip\n"
              "https://example.org/wheels/numpy-1.26.0-cp310-cp310-macosx_11_0_arm64.whl\n",
              path="requirements.txt"),
    )
    INVALID = (
        Invalid("--extra-index-url https://download.pytorch.org/whl/cu121\n"
                "torch==2.1.0+cu121\ncupy-cuda12x\nnvidia-cudnn-cu12==8.9.2.26\n",
                path="requirements-gpu.txt", count=4),
        Invalid("flash-attn==2.5.6 \\\n    --hash=sha256:abc\n", path="requirements/gpu.txt"),
        Invalid("git+https://github.com/NVlabs/tiny-cuda-nn/#subdirectory=bindings/torch\n"
                "git+https://github.com/Dao-AILab/flash-attention.git@v2.5.8\n"
                "https://github.com/Dao-AILab/flash-attention/releases/download/v2.5.8/"
                "flash_attn-2.5.8+cu122torch2.3cxx11abiFALSE-cp310-cp310-linux_x86_64.whl\n",
                path="requirements.txt", count=3),
        Invalid("tensorflow-gpu==2.10\npaddlepaddle-gpu\nonnxruntime-gpu\nfaiss-gpu\n"
                "jax[cuda12]\nnvidia-nccl-cu12\njax-cuda12-plugin\n", path="requirements.txt",
                count=7),
        Invalid('triton==2.1.0; sys_platform == "linux"\n', path="requirements.txt"),
        Invalid("[project]\nname = 'x'\ndependencies = ['torch>=2.1']\n\n"
                "[project.optional-dependencies]\ngpu = ['xformers', 'jax[cuda12]']\n",
                path="pyproject.toml", count=2),
        Invalid("[[tool.uv.index]]\nname = 'pytorch-cu121'\n"
                "url = 'https://download.pytorch.org/whl/cu121'\n\n"
                "[tool.uv.sources]\ntorch = { index = 'pytorch-cu121' }\n",
                path="pyproject.toml", count=2),
        Invalid("[tool.poetry.dependencies]\npython = '^3.10'\ncupy-cuda12x = '^12.0'\n",
                path="pyproject.toml"),
        Invalid("[options]\ninstall_requires =\n    numpy\n    onnxruntime-gpu\n",
                path="setup.cfg"),
        Invalid("pip install torch==2.1.0 --index-url https://download.pytorch.org/whl/cu121\n",
                path="scripts/setup_env.sh"),
        Invalid("FROM python:3.11\nRUN python -m pip install --no-cache-dir flash-attn \\\n"
                "    xformers\n", path="Dockerfile", count=2),
        Invalid("FROM python:3.11\n"
                "ENV PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cu121\n",
                path="Dockerfile"),
        Invalid("FROM python:3.11\nARG TORCH_INDEX=https://download.pytorch.org/whl/cu121\n"
                "RUN pip install torch --index-url ${TORCH_INDEX}\n", path="Dockerfile"),
    )

    def check(self, source: SourceFile) -> Iterator[Finding]:
        if source.kind is FileKind.REQUIREMENTS:
            yield from self._requirements(source)
        elif source.kind in (FileKind.PYPROJECT, FileKind.SETUP_CFG):
            yield from self._project_file(source)
        else:
            if source.kind is FileKind.DOCKERFILE:
                yield from self._docker_env(source)
            for commands, variables in scripts.scripts_of(source):
                for command, word, problem in pip_commands(commands, variables):
                    yield finding(self, source, command.position(word), problem,
                                  guarded=command.guarded)

    def _requirements(self, source: SourceFile) -> Iterator[Finding]:
        off_macos: list[tuple[Line, Problem]] = []
        for line in read_lines(source.lines):
            problem = line_problem(line)
            if problem is not None and problem.off_macos:
                off_macos.append((line, problem))
            elif problem is not None:
                column = line.value_column if line.option else line.column
                yield finding(self, source, (line.row, column), problem)
        if off_macos:
            yield self._off_macos(source, off_macos)

    def _off_macos(self, source: SourceFile, pins: list[tuple[Line, Problem]]) -> Finding:
        """The pins a marker keeps off macOS (a lock export lists torch's Linux-only CUDA
        dependencies so): one info finding for the file, at the first, with the count."""
        first, problem = pins[0]
        if len(pins) > 1:
            names = [_name(line.text) for line, _ in pins]
            shown = ", ".join(f"`{name}`" for name in names[:3]) + (", ..." if len(names) > 3
                                                                       else "")
            problem = Problem(f"{len(pins)} CUDA pins ({shown}) are kept off macOS by their "
                              "markers: pip skips them there, so they only matter on Linux "
                              "with CUDA", Severity.INFO, off_macos=True)
        return finding(self, source, (first.row, first.column), problem)

    def _project_file(self, source: SourceFile) -> Iterator[Finding]:
        read = (project_files.pyproject if source.kind is FileKind.PYPROJECT
                else project_files.setup_cfg)
        for item in read(source.text or ""):
            if isinstance(item, FormatError):
                yield error_finding(source.path, item.message, item.row, item.column)
            else:
                yield finding(self, source, (item.row, item.column), item.problem,
                              guarded=item.guarded)

    def _docker_env(self, source: SourceFile) -> Iterator[Finding]:
        """pip's index variables set by `ENV`, read with the `ARG` defaults and `ENV` values
        set before (`ENV PIP_FIND_LINKS=${TORCH_WHEELS}`)."""
        for instruction, variables in dockerfile.with_variables(source.text or ""):
            if instruction.keyword == "ENV":
                for name, value, where in instruction.env_pairs():
                    for problem in _index_variable(name, value, variables):
                        yield finding(self, source, where, problem)

"""CUD501: `nvidia-smi` and `nvcc` invocations, in scripts and in Python."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import FileRule, Invalid, PythonRule, Valid
from cudalint.engine.walk import scopes
from cudalint.kinds import SHELL_RULE_KINDS, SourceFile

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from cudalint.engine.walk.context import PythonContext
    from cudalint.finding import Finding
    from cudalint.formats.shell import Command, Word

_TOOLS = {
    "nvidia-smi": "`nvidia-smi` only exists where the NVIDIA driver is installed; ask PyTorch "
                  "instead (`torch.cuda.is_available()`, `torch.backends.mps.is_available()`, "
                  "`torch.mps.current_allocated_memory()`)",
    "nvcc": "`nvcc` is the CUDA compiler, absent on a Mac; build the CUDA parts only where "
            "`nvcc` exists, with a PyTorch fallback elsewhere",
}
# Commands that run another command given among their arguments.
_RUNNERS = frozenset({"watch", "timeout", "srun", "mpirun", "mpiexec", "ssh", "parallel",
                      "docker", "podman", "singularity", "apptainer", "kubectl", "gdb",
                      "strace", "flock", "retry"})
_SUBPROCESS = frozenset({
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "subprocess.Popen", "subprocess.getoutput", "subprocess.getstatusoutput", "os.system",
    "os.popen", "os.execvp", "os.execlp", "os.execv", "os.execl", "os.spawnlp", "os.spawnvp",
    "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell",
})
_PATH_JOINS = frozenset({"os.path.join", "posixpath.join"})
# Exceptions a failed launch raises: a call inside `try` catching them is guarded.
_LAUNCH_ERRORS = frozenset({"FileNotFoundError", "OSError", "CalledProcessError",
                            "SubprocessError", "Exception", "BaseException", "EnvironmentError"})
_PROBE = re.compile(r"nvidia|nvcc|cuda", re.IGNORECASE)


def tool_words(command: Command, variables: Mapping[str, str] | None = None,
               ) -> Iterator[tuple[Word, str]]:
    """`nvidia-smi`/`nvcc` run by a command, directly or through `watch`, `srun`, ..., with
    the program it runs (its basename is the tool): also where a variable set before
    (`variables`) holds it (`NVCC=/usr/local/cuda/bin/nvcc` then `$NVCC --version`), or a
    loop over candidate paths gives it (`for smi in /usr/bin/nvidia-smi nvidia-smi; do
    "$smi" -L; done`)."""
    from cudalint.formats.shell import basename, program  # the shell parser: only for commands

    def run(word: Word, names: Iterable[str]) -> str | None:
        return next((value for value in command.candidates(word, variables or {})
                     if basename(value) in names), None)

    argv = program(command)
    if not argv:
        return
    if (found := run(argv[0], _TOOLS)) is not None:
        yield argv[0], found
    elif run(argv[0], _RUNNERS) is not None:
        yield from ((word, found) for word in argv[1:] if (found := run(word, _TOOLS)))


class NvidiaToolCall(FileRule):
    """
    ## What it does
    Finds `nvidia-smi` and `nvcc` run as commands: in shell scripts (also inside `$(...)`,
    pipes, `&&` chains, `bash -c '...'`, `watch`/`srun`/`timeout`), Makefile recipes and
    `$(shell ...)`, Dockerfile `RUN`/`CMD`, CI `run:` steps (GitHub workflows, composite
    actions) and GitLab `script:` lines, notebooks (`!nvidia-smi`), and Python
    (`subprocess.run(["nvidia-smi", ...])`, `subprocess.run("nvcc --version", shell=True)`,
    `os.system`, `os.popen`, also through a built path: `cuda_dir + "/bin/nvcc"`,
    `os.path.join(CUDA_HOME, "bin", "nvcc")`, `f"{home}/bin/nvcc"`), also where the program
    reaches the call through a variable (`NVCC=/usr/local/cuda/bin/nvcc` then `$NVCC -V`; in
    a Dockerfile an `ARG` default or `ENV` value of the stage) or a loop over candidate paths
    (`for smi in /usr/bin/nvidia-smi nvidia-smi; do "$smi" -L; done`). A mention in `echo`,
    a comment, a string that is printed, or a lookup (`command -v nvidia-smi`, `which nvcc`,
    `shutil.which`) is not reported.

    A call whose failure is handled is guarded (a warning): in an `if` condition or after
    `command -v nvidia-smi &&` in shell, before `|| true`, in an `if` branch testing for
    CUDA, or in Python inside `try` catching `FileNotFoundError`/`OSError`/
    `CalledProcessError`. A `test && nvidia-smi` list is guarded only when the test is
    itself a CUDA or driver probe (`nvidia-smi -L &&`, `command -v nvcc &&`,
    `[ -d /usr/local/cuda ] &&`), never when it tests a user's setting
    (`[ -z "$n_gpu" ] && n_gpu=$(nvidia-smi -L | wc -l)`, as its `if` form).

    ## Why is this bad?
    Neither tool exists on a Mac: the command fails with "command not found" (a script with
    `set -e` stops there) and Python raises `FileNotFoundError`. Severity: error.

    ## Example
    ```bash
    nvidia-smi --query-gpu=name,memory.total --format=csv
    ```

    ## Use instead
    ```bash
    python -c "import torch; print(torch.cuda.is_available() or torch.backends.mps.is_available())"
    ```
    or keep the call behind `if command -v nvidia-smi >/dev/null; then ... fi`. A
    `# noqa: CUD501` comment on the line suppresses a finding (in a Dockerfile, on the line
    above the instruction).
    """

    code = "CUD501"
    name = "nvidia-tool-call"
    message = "runs an NVIDIA command-line tool"
    file_kinds = SHELL_RULE_KINDS
    VALID = (
        Valid('echo "run nvidia-smi to see the GPUs"  # nvidia-smi\n', path="run.sh"),
        Valid("if command -v nvidia-smi >/dev/null; then echo gpu; fi\nwhich nvcc\n",
              path="run.sh"),
        Valid("build:\n\t@echo nvcc is not used here\n", path="Makefile"),
        Valid("FROM python:3.11\n# RUN nvidia-smi\nRUN pip install torch\n",
              path="Dockerfile"),
    )
    INVALID = (
        Invalid("set -e\nnvidia-smi\nGPUS=$(nvidia-smi -L | wc -l)\n", path="run.sh", count=2),
        Invalid('echo "GPUs: $(nvidia-smi --query-gpu=name --format=csv)"\n', path="run.sh"),
        Invalid("watch -n 1 nvidia-smi &\nbash -c 'nvcc --version'\n", path="monitor.sh",
                count=2),
        Invalid("NVCC := nvcc\nkern: kern.cu\n\t$(NVCC) -O3 -o $@ $<\n", path="Makefile"),
        Invalid("FROM nvidia/cuda:12.1.0-devel-ubuntu22.04\nRUN nvcc --version && \\\n"
                "    nvidia-smi\n", path="Dockerfile", count=2),
        Invalid("command -v nvidia-smi && nvidia-smi -L\nnvidia-smi || true\n",
                path="run.sh", count=2),
        Invalid("NVCC=/usr/local/cuda/bin/nvcc\n$NVCC --version\n"
                "for smi in /usr/bin/nvidia-smi nvidia-smi; do \"$smi\" -L; done\n",
                path="build.sh", count=2),
        Invalid("jobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
                "      - run: echo 'nvidia-smi shows the GPUs'\n      - run: |\n"
                "          nvidia-smi\n          pytest\n", path=".github/workflows/ci.yml"),
    )

    def check(self, source: SourceFile) -> Iterator[Finding]:
        from cudalint.formats import scripts
        from cudalint.formats.shell import basename, value_note, with_variables

        for commands, variables in scripts.scripts_of(source):
            for command, known in with_variables(commands, variables):
                for word, program in tool_words(command, known):
                    row, column = command.position(word)
                    message = _TOOLS[basename(program)] + value_note(word.value, program)
                    yield self.finding(source, row, column, message=message,
                                       guarded=command.guarded)


class NvidiaToolSubprocess(PythonRule):
    """
    ## What it does
    Finds `nvidia-smi` and `nvcc` run from Python: `subprocess.run/call/check_output/Popen`
    with a list or a command string, `os.system`, `os.popen`, `os.exec*`,
    `asyncio.create_subprocess_*`, also when the program's path is built
    (`os.path.join(CUDA_HOME, "bin", "nvcc")`) or reaches the call through a variable of the
    same function (`nvcc = "nvcc"; subprocess.run([nvcc, "-V"])`, `f"{nvcc} -V"`) or a loop
    over candidate paths (`for nvcc in [cuda_home + "/bin/nvcc", "nvcc"]:`). Part of CUD501
    (see its page).

    ## Why is this bad?
    On a Mac the program does not exist: `FileNotFoundError`, or a shell's "command not
    found".

    ## Example
    ```python
    out = subprocess.check_output(["nvidia-smi", "--query-gpu=memory.used", "--format=csv"])
    ```

    ## Use instead
    ```python
    used = torch.cuda.memory_allocated() if torch.cuda.is_available() else 0
    ```
    """

    code = "CUD501"
    follows_assignments = False
    name = "nvidia-tool-call"
    primary = False  # documented by the script rule
    message = "runs an NVIDIA command-line tool"
    keywords = ("nvidia-smi", "nvcc")
    VALID = (
        "print('run nvidia-smi to see the GPUs')\n",
        "import shutil\nhas_gpu = shutil.which('nvidia-smi') is not None\n",
        "import subprocess\nsubprocess.run(['echo', 'nvidia-smi'])\n",
        "flags = {'nvcc': ['-O3']}\n",
        "import subprocess\nsubprocess.run([python + '/bin/python', 'nvcc_report.py'])\n",
        "import os\nos.system(f'echo {home}/bin/nvcc')\n",
        "import subprocess\nsubprocess.run(cmd)\n",
    )
    INVALID = (
        Invalid("import subprocess\nout = subprocess.check_output(['nvidia-smi', '-L'])\n"),
        Invalid("import subprocess\nsubprocess.run('nvcc --version', shell=True)\n"),
        Invalid("import os\nos.system('nvidia-smi > gpu.txt')\nos.popen(\"nvidia-smi -L\")\n",
                count=2),
        Invalid("from subprocess import Popen\np = Popen(args=('/usr/bin/nvidia-smi',))\n"),
        Invalid("import subprocess\ntry:\n    subprocess.run(['nvidia-smi'], check=True)\n"
                "except (FileNotFoundError, subprocess.CalledProcessError):\n    pass\n"),
        Invalid("import subprocess\n"
                "out = subprocess.check_output([cuda_dir + '/bin/nvcc', '-V'])\n"),
        Invalid("import os, subprocess\nfrom torch.utils.cpp_extension import CUDA_HOME\n"
                "subprocess.run([os.path.join(CUDA_HOME, 'bin', 'nvcc'), '--version'])\n"),
        Invalid("import os\nos.system(f'{home}/bin/nvcc --version')\n"),
        Invalid("import subprocess\nnvcc = 'nvcc'\nsubprocess.run([nvcc, '-V'])\n"),
        Invalid("import os, subprocess\n\ndef nvcc_version(home):\n"
                "    for nvcc in [os.path.join(home, 'bin', 'nvcc'), 'nvcc']:\n"
                "        try:\n            return subprocess.check_output([nvcc, '--version'])\n"
                "        except OSError:\n            continue\n"),
    )

    def __init__(self, ctx: PythonContext) -> None:
        super().__init__(ctx)
        self._assigned: dict[int, dict[str, list[cst.BaseExpression]]] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.call_name(node) not in _SUBPROCESS or not node.args:
            return
        command = next((a.value for a in node.args if a.keyword is None), None)
        if command is None:
            command = next((a.value for a in node.args if a.keyword is not None
                            and a.keyword.value in ("args", "cmd", "command")), None)
        target = self._tool_node(command)
        if target is not None:
            tool, where = target
            self.report(where, _TOOLS[tool], guarded=self.ctx.is_guarded() or self._handled())

    def _tool_node(self, expr: cst.BaseExpression | None) -> tuple[str, cst.CSTNode] | None:
        # the shell parser: once a subprocess call is seen
        from cudalint.formats.shell import basename, read_command_string

        if isinstance(expr, cst.Name):
            expr = self._value_of(expr) or expr  # `cmd = [nvcc, "-V"]; subprocess.run(cmd)`
        if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements:
            first = expr.elements[0].value
            for value in self._programs(first):
                if basename(value) in _TOOLS:
                    return basename(value), first
            return None
        text = self._template(expr) if expr is not None else None
        if text is not None and expr is not None:
            for command in read_command_string(text):
                for _, program in tool_words(command):
                    return basename(program), expr
        return None

    def _programs(self, expr: cst.BaseExpression) -> list[str]:
        """What a program argument may be: its text, the value its variable holds (in this
        function), or each candidate of a loop over them."""
        if isinstance(expr, cst.Name):
            value = self._value_of(expr)
            if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
                return [t for e in value.elements if (t := self._template(e.value)) is not None]
            if value is not None:
                expr = value
        text = self._template(expr)
        return [] if text is None else [text]

    def _value_of(self, name: cst.Name) -> cst.BaseExpression | None:
        """The candidates of the loop `name` runs over (`for nvcc in [a, "nvcc"]:`), or the
        last value the enclosing function (or, at module level, the module) assigns it:
        only what the unit being walked itself assigns, which names this rule's terms."""
        scope: cst.CSTNode = self.ctx.module
        for node in self.ctx.ancestors():
            if isinstance(node, cst.For) and isinstance(node.target, cst.Name) \
                    and node.target.value == name.value:
                return node.iter
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                scope = node
                break
        known = self._assigned.get(id(scope))
        if known is None:  # read once per scope, only where a call runs a variable
            known = self._assigned[id(scope)] = scopes.assignments(scope)
        values = known.get(name.value)
        return values[-1] if values else None

    def _template(self, expr: cst.BaseExpression) -> str | None:
        """The text of a string built from literals and values (`cuda_dir + "/bin/nvcc"`,
        `os.path.join(CUDA_HOME, "bin", "nvcc")`, `f"{home}/bin/nvcc -V"`), each value
        standing as `x`; None without any literal."""
        if isinstance(expr, cst.SimpleString):
            value = expr.evaluated_value
            return value if isinstance(value, str) else None
        parts: list[str | None] = []
        if isinstance(expr, cst.FormattedString):
            parts = [p.value if isinstance(p, cst.FormattedStringText) else self._part(p)
                     for p in expr.parts]
        elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            parts = [self._template(expr.left), self._template(expr.right)]
        elif isinstance(expr, cst.Call) and self.ctx.call_name(expr) in _PATH_JOINS:
            joined = [self._template(a.value) for a in expr.args]
            if any(part is not None for part in joined):
                return "/".join(part or "x" for part in joined)
            return None
        if not any(part is not None for part in parts):
            return None
        return "".join(part or "x" for part in parts)

    def _part(self, part: cst.BaseFormattedStringContent) -> str:
        """An f-string's `{nvcc}`: the text of the value the variable holds, else `x`."""
        expression = getattr(part, "expression", None)
        if isinstance(expression, cst.Name):
            value = self._value_of(expression)
            if value is not None and not isinstance(value, cst.FormattedString):
                return self._template(value) or "x"
        return "x"

    def _handled(self) -> bool:
        """Inside `try` catching a launch failure, or an `if` testing for the tool or CUDA."""
        chain = [self.ctx.stack[-1], *self.ctx.ancestors()]
        for child, parent in itertools.pairwise(chain):
            if isinstance(parent, cst.Try) and child is parent.body and any(
                _catches_launch_error(handler) for handler in parent.handlers
            ):
                return True
            if isinstance(parent, cst.If) and child is parent.body and _PROBE.search(
                self.ctx.module.code_for_node(parent.test)
            ):
                return True
        return False


def _catches_launch_error(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    kinds = ([element.value for element in handler.type.elements]
             if isinstance(handler.type, cst.Tuple) else [handler.type])
    for kind in kinds:
        name = kind.attr if isinstance(kind, cst.Attribute) else kind  # subprocess.X -> X
        if isinstance(name, cst.Name) and name.value in _LAUNCH_ERRORS:
            return True
    return False

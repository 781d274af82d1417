"""CUD502: CUDA environment variables, set in scripts, Dockerfiles, Makefiles, compose files
and notebooks (`%env`), and read or set from Python (`os.environ`)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import FileRule, Invalid, PythonRule, Valid
from cudalint.engine.first_pass.prefilter import GAP, Terms
from cudalint.engine.first_pass.prefilter import word as whole_word
from cudalint.finding import Finding, Severity
from cudalint.kinds import SHELL_RULE_KINDS, FileKind, SourceFile
from cudalint.rules import tables

if TYPE_CHECKING:
    from cudalint.engine.walk.context import Settings

_SELECTS = "selects NVIDIA GPUs; MPS and the CPU ignore it: choose the device in code"
_TOOLKIT = "points at the CUDA toolkit, which a Mac does not have"
# (name glob, what it does, severity when set); the first match wins.
_VARIABLES: tuple[tuple[str, str, Severity], ...] = (
    ("CUDA_VISIBLE_DEVICES", _SELECTS, Severity.INFO),
    ("NVIDIA_VISIBLE_DEVICES", _SELECTS, Severity.INFO),
    ("CUDA_HOME", _TOOLKIT, Severity.INFO),
    ("CUDA_PATH", _TOOLKIT, Severity.INFO),
    ("CUDA_ROOT", _TOOLKIT, Severity.INFO),
    ("CUDA_TOOLKIT_ROOT_DIR", _TOOLKIT, Severity.INFO),
    ("CUDA_LAUNCH_BLOCKING", "makes CUDA kernel launches synchronous for debugging; it does "
     "nothing on MPS", Severity.INFO),
    ("FORCE_CUDA", "forces CUDA extension builds, which fail without nvcc", Severity.ERROR),
    ("TORCH_CUDA_ARCH_LIST", "chooses CUDA architectures for extension builds, which need "
     "nvcc", Severity.INFO),
    ("PYTORCH_CUDA_ALLOC_CONF", "tunes the CUDA caching allocator; on MPS the knob is "
     "`PYTORCH_MPS_HIGH_WATERMARK_RATIO`", Severity.INFO),
    ("NCCL_*", "configures NCCL, which only runs on NVIDIA GPUs (gloo is the portable "
     "backend)", Severity.INFO),
    ("TORCH_NCCL_*", "configures NCCL, which only runs on NVIDIA GPUs (gloo is the portable "
     "backend)", Severity.INFO),
    ("PYTORCH_NVML_BASED_CUDA_CHECK", "configures CUDA, which a Mac does not have",
     Severity.INFO),
    *((name, "configures CUDA, which a Mac does not have: it does nothing there",
       Severity.INFO) for name in tables.load("cuda_environment.toml")["variables"]),
    ("CUDNN_*", "configures cuDNN, which a Mac does not have", Severity.INFO),
    ("CUBLAS_*", "configures cuBLAS, which a Mac does not have", Severity.INFO),
    ("NVIDIA_*", "configures the NVIDIA driver or container runtime, absent on a Mac",
     Severity.INFO),
)
_NAMED = frozenset(name for name, _, _ in _VARIABLES if "*" not in name)
_SEARCH_PATHS = frozenset({"PATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH"})
_CUDA_PATH_ENTRY = re.compile(r"/usr/local/cuda|\$\{?CUDA_(?:HOME|PATH)")
_OFF = frozenset({"", "0", "false", "no", "off"})
# `CUDA_VISIBLE_DEVICES` set to these hides every GPU: the portable way to force the CPU or MPS.
_HIDES_GPUS = frozenset({"", "-1"})
# A name holding `CUDA` that `judge` may know: `CUDA` after no letter or digit (`FORCE_CUDA`),
# then capitals, digits and underscores.
_CUDA_NAME = r"CUDA(?<![A-Za-z0-9]CUDA)[A-Z0-9_]*"
# Such a name ending its string, or before an escape in it; or a variable read in a value
# (`"$CUDA_HOME/bin"`, `"${CUDA_PATH}"`: `_CUDA_PATH_ENTRY`).
_CUDA_VARIABLE = rf"{_CUDA_NAME}(?:['\"\\]|(?<=\$CUDA_)|(?<=\{{CUDA_))"


def judge(name: str, value: str | None = None) -> tuple[str, Severity] | None:
    """Why setting `name` (to `value`) assumes CUDA, and how bad that is; None if it doesn't."""
    if name in _SEARCH_PATHS:
        if value is not None and _CUDA_PATH_ENTRY.search(value):
            return f"`{name}` gets the CUDA toolkit's folder, which a Mac does not have", \
                Severity.INFO
        return None
    unquoted = None if value is None else value.strip().strip("'\"").strip()
    if name == "CUDA_VISIBLE_DEVICES" and unquoted in _HIDES_GPUS:
        return None
    for pattern, why, severity in _VARIABLES:
        if fnmatch.fnmatchcase(name, pattern):
            if name == "FORCE_CUDA" and unquoted is not None and unquoted.lower() in _OFF:
                return None
            return f"`{name}` {why}", severity
    return None


class CudaEnvironmentVariable(FileRule):
    """
    ## What it does
    Finds CUDA environment variables: `CUDA_VISIBLE_DEVICES`, `CUDA_HOME`, `CUDA_PATH`,
    `CUDA_LAUNCH_BLOCKING`, `CUDA_VERSION` and the other variables of the CUDA runtime,
    driver and toolkit (a table, not any name starting with `CUDA_`), `NCCL_*`, `NVIDIA_*`,
    `CUDNN_*`, `PYTORCH_CUDA_ALLOC_CONF`, `TORCH_CUDA_ARCH_LIST`, `FORCE_CUDA`, and `PATH` /
    `LD_LIBRARY_PATH` entries under `/usr/local/cuda`. Read in shell scripts (`export X=`,
    `X=1`, `X=1 python train.py`, `env X=1 ...`), Makefiles (recipes, exported variables
    and the variables named above, such as `CUDA_HOME ?= /usr/local/cuda`),
    Dockerfiles (`ENV`, and `export` in `RUN`), compose `environment:`, the commands of
    CI `run:`/`script:` steps (not a workflow's `env:`, which CUD404 reads), notebooks
    (`%env X=1`) and Python (`os.environ[...]`, `os.environ.get`, `os.getenv`,
    `os.environ.setdefault`, `os.putenv`, `os.environ.update`). `CUDA_HOME` imported from
    `torch.utils.cpp_extension` is CUD301. Not `CUDA_VISIBLE_DEVICES` set to `""` or `"-1"`
    (`export CUDA_VISIBLE_DEVICES=`, `os.environ["CUDA_VISIBLE_DEVICES"] = "-1"`), which
    hides every GPU to force the CPU or MPS: the portable choice.

    Severity: setting a variable is info (it does nothing off CUDA), except `FORCE_CUDA=1`,
    an error (it forces a CUDA build that fails without nvcc); reading one in Python is a
    warning with `.get()`/`getenv()` (None off CUDA machines) and an error with
    `os.environ["X"]` (`KeyError`).

    ## Why is this bad?
    These variables only mean something to the CUDA stack. A script relying on
    `CUDA_VISIBLE_DEVICES` to pick a GPU runs on whatever device the code picks on a Mac, and
    code reading `CUDA_HOME` finds nothing there.

    ## Example
    ```bash
    export CUDA_VISIBLE_DEVICES=0,1
    export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
    ```

    ## Use instead
    Choose the device in code (`pick_device()`), and keep CUDA settings in a Linux-only
    branch of the script. A `# noqa: CUD502` comment on the line suppresses a finding.
    """

    code = "CUD502"
    name = "cuda-environment-variable"
    message = "CUDA environment variable"
    severity = Severity.INFO
    site_severities = (Severity.ERROR, Severity.WARNING)
    file_kinds = frozenset({*SHELL_RULE_KINDS, FileKind.COMPOSE})
    VALID = (
        Valid('echo "export CUDA_VISIBLE_DEVICES=0"\n# CUDA_HOME=/usr/local/cuda\n'
              "export OMP_NUM_THREADS=8\nFORCE_CUDA=0 pip install .\n", path="run.sh"),
        Valid('CUDA_FLAG="--cuda"\nexport CUDA_ARCH=sm_80\npython train.py $CUDA_FLAG\n',
              path="run.sh"),
        Valid("FROM python:3.11\nENV PYTHONUNBUFFERED=1 PATH=/opt/venv/bin:$PATH\n",
              path="Dockerfile"),
        Valid("services:\n  app:\n    environment:\n      - PYTHONUNBUFFERED=1\n",
              path="compose.yaml"),
        Valid('if [ "$DEVICE" = cpu ]; then\n  export CUDA_VISIBLE_DEVICES=""\nfi\n'
              "CUDA_VISIBLE_DEVICES=-1 python eval.py --device cpu\n", path="eval.sh"),
        Valid("jobs:\n  cpu:\n    runs-on: macos-14\n    env:\n      CUDA_VISIBLE_DEVICES: ''\n"
              "    steps:\n      - run: |\n          echo \"export CUDA_HOME=/usr/local/cuda\"\n"
              "          CUDA_VISIBLE_DEVICES=-1 pytest\n", path=".github/workflows/cpu.yml"),
    )
    INVALID = (
        Invalid("export CUDA_VISIBLE_DEVICES=0,1\nCUDA_LAUNCH_BLOCKING=1 python train.py\n"
                "export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH\n",
                path="train.sh", count=3),
        Invalid("export CUDA_MODULE_LOADING=LAZY\nCUDA_DEVICE_MAX_CONNECTIONS=1\n"
                "export NCCL_DEBUG=INFO NVIDIA_TF32_OVERRIDE=0\n", path="train.sh", count=4),
        Invalid("FROM python:3.11\nENV CUDA_HOME=/usr/local/cuda \\\n"
                "    TORCH_CUDA_ARCH_LIST=\"8.0 9.0\"\nRUN export NCCL_DEBUG=INFO\n",
                path="Dockerfile", count=3),
        Invalid("CUDA_HOME ?= /usr/local/cuda\nall:\n\tFORCE_CUDA=1 python setup.py build\n",
                path="Makefile", count=2),
        Invalid("services:\n  train:\n    environment:\n      NVIDIA_VISIBLE_DEVICES: all\n"
                "  eval:\n    environment:\n      - NCCL_P2P_DISABLE=1\n",
                path="docker-compose.yml", count=2),
        # the commands of a CI step are read as a script, at their rows inside the block
        Invalid("jobs:\n  build:\n    runs-on: ubuntu-22.04\n    steps:\n      - run: |\n"
                "          export CUDA_HOME=/usr/local/cuda-12.8\n"
                "          CUDA_VISIBLE_DEVICES=0 pytest\n",
                path=".github/workflows/build.yml", count=2),
    )

    def check(self, source: SourceFile) -> Iterator[Finding]:
        from cudalint.formats import dockerfile, makefile, scripts  # not for Python files
        from cudalint.formats.shell import assigned

        if source.kind is FileKind.COMPOSE:
            yield from self._compose(source)
            return
        if source.kind is FileKind.DOCKERFILE:
            for instruction in dockerfile.parse(source.text or ""):
                if instruction.keyword == "ENV":
                    for name, value, where in instruction.env_pairs():
                        yield from self._report(source, name, value, where)
        if source.kind is FileKind.MAKEFILE:
            for item in makefile.parse(source.text or "").assignments:
                # a make variable reaches the environment when exported; `CUDA_HOME ?= ...`
                # also reads it from there
                if item.exported or item.name in _NAMED:
                    yield from self._report(source, item.name, item.value,
                                            (item.row, item.column))
        for command in scripts.commands(source):
            for word in assigned(command):
                name, _, value = word.value.partition("=")
                yield from self._report(source, name, value, command.position(word),
                                        guarded=command.guarded)

    def _report(self, source: SourceFile, name: str, value: str, where: tuple[int, int], *,
                guarded: bool = False) -> Iterator[Finding]:
        verdict = judge(name, value)
        if verdict is not None:
            message, severity = verdict
            yield self.finding(source, *where, message=message, severity=severity,
                               guarded=guarded)

    def _compose(self, source: SourceFile) -> Iterator[Finding]:
        from cudalint.formats import yaml_lines  # PyYAML: only for a compose file

        services = yaml_lines.compose_services(source)
        if isinstance(services, Finding):
            yield services
            return
        for service in services:
            environment = yaml_lines.get(service, "environment")
            for key, value in yaml_lines.items(environment):
                yield from self._report(source, yaml_lines.scalar(key) or "",
                                        yaml_lines.scalar(value) or "",
                                        yaml_lines.where(key))
            for entry in yaml_lines.entries(environment):
                name, _, value = (yaml_lines.scalar(entry) or "").partition("=")
                yield from self._report(source, name, value, yaml_lines.value_start(entry))


_ENVIRON_CALLS = {
    "os.environ.get": "read",
    "os.getenv": "read",
    "os.environ.setdefault": "set",
    "os.putenv": "set",
    "os.environ.pop": "set",
    "os.unsetenv": "set",
}


class CudaEnvironmentAccess(PythonRule):
    """
    ## What it does
    Finds CUDA environment variables read or set from Python: `os.environ["CUDA_HOME"]`,
    `os.environ.get(...)`, `os.getenv(...)`, `os.environ.setdefault(...)`, `os.putenv(...)`,
    `os.environ.update({...})`, `"X" in os.environ`. Part of CUD502 (see its page).

    ## Why is this bad?
    Off CUDA machines these variables are unset: `os.environ["CUDA_HOME"]` raises `KeyError`
    and `.get()` returns None; setting them does nothing.

    ## Example
    ```python
    os.environ["CUDA_VISIBLE_DEVICES"] = str(args.gpu)
    nvcc = os.path.join(os.environ["CUDA_HOME"], "bin", "nvcc")
    ```

    ## Use instead
    ```python
    device = pick_device(args.gpu)
    ```
    """

    code = "CUD502"
    follows_assignments = False
    name = "cuda-environment-variable"
    primary = False  # documented by the script rule
    message = "CUDA environment variable"
    severity = Severity.INFO
    keywords = ("NCCL_", "NVIDIA_", "CUDNN_", "CUBLAS_", "/usr/local/cuda")
    VALID = (
        "import os\nrank = int(os.environ.get('LOCAL_RANK', 0))\n",
        "print('set CUDA_VISIBLE_DEVICES to pick a GPU')\n",
        "from torch.utils.cpp_extension import CUDA_HOME\n",
        "import os\nos.environ['FORCE_CUDA'] = '0'\n",
        "import os\nuse_cuda = os.environ.get('CUDA_FLAG') == '1'\n",
        "import os\n\ndef force_cpu(device):\n    if device in ('cpu', 'mps'):\n"
        "        os.environ['CUDA_VISIBLE_DEVICES'] = '-1'\n",
        "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = ''  # hide the GPUs: run on the CPU\n",
    )
    INVALID = (
        Invalid("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"),
        Invalid("import os\n\ndef select(gpus):\n"
                "    os.environ['CUDA_VISIBLE_DEVICES'] = ','.join(map(str, gpus))\n"),
        Invalid("import os\nhome = os.environ['CUDA_HOME']\npath = os.getenv('CUDA_PATH')\n",
                count=2),
        Invalid("from os import environ\nenviron.setdefault('NCCL_DEBUG', 'INFO')\n"
                "environ.update({'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True'})\n",
                count=2),
        Invalid("import os\nif 'CUDA_VISIBLE_DEVICES' in os.environ:\n    pass\n"),
        Invalid("import os\nos.environ['LD_LIBRARY_PATH'] += ':/usr/local/cuda/lib64'\n"),
    )

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """A variable's name is a string (or a keyword of `os.environ.update`) that `judge`
        knows: one holding `CUDA` ends it or its string (`"CUDA_HOME"`, `"FORCE_CUDA"`,
        `"CUDA_" "HOME"`, `"CUDA\\x5fHOME"`), or a search path's value names the toolkit
        (`$CUDA_HOME`, `${CUDA_PATH}`, `/usr/local/cuda`): not `TEST_CUDA`, `dtypesIfCUDA`."""
        return Terms(cls.keywords, patterns=(_CUDA_VARIABLE,),
                     together=((rf"{_CUDA_NAME}{GAP}=", whole_word("update")),))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if self.ctx.qualname(node.value) != "os.environ" or len(node.slice) != 1:
            return
        key = node.slice[0].slice
        if not isinstance(key, cst.Index) or (name := _string(key.value)) is None:
            return
        parent = self.ctx.parent()
        if isinstance(parent, cst.AssignTarget):
            self._set(key.value, name, self._text(getattr(self.ctx.parent(2), "value", None)))
        elif isinstance(parent, cst.AugAssign) and parent.target is node:
            self._set(key.value, name, self._text(parent.value))
        elif not isinstance(parent, cst.Del):
            self._read(key.value, name, Severity.ERROR, "`os.environ[...]` raises KeyError there")

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.call_name(node)
        if qualified == "os.environ.update":
            self._update(node)
            return
        kind = _ENVIRON_CALLS.get(qualified or "")
        if kind is None or not node.args:
            return
        name = _string(node.args[0].value)
        if name is None:
            return
        if kind == "read":
            self._read(node.args[0].value, name, Severity.WARNING, "it is None there")
        else:
            value = _string(node.args[1].value) if len(node.args) > 1 else None
            self._set(node.args[0].value, name, value)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        for target in node.comparisons:
            if isinstance(target.operator, (cst.In, cst.NotIn)) and \
                    self.ctx.qualname(target.comparator) == "os.environ":
                name = _string(node.left)
                verdict = judge(name) if name is not None else None
                if verdict is not None:
                    self.report(node.left, f"{verdict[0]}; it is never set on a Mac",
                                severity=Severity.INFO)

    def _update(self, node: cst.Call) -> None:
        for arg in node.args:
            if arg.keyword is not None:
                self._set(arg.keyword, arg.keyword.value, _string(arg.value))
            elif isinstance(arg.value, cst.Dict):
                for element in arg.value.elements:
                    name = _string(element.key) if isinstance(element, cst.DictElement) else None
                    if name is not None and isinstance(element, cst.DictElement):
                        self._set(element.key, name, _string(element.value))

    def _set(self, node: cst.CSTNode, name: str, value: str | None) -> None:
        verdict = judge(name, value)
        if verdict is not None:
            self.report(node, verdict[0], severity=verdict[1])

    def _read(self, node: cst.CSTNode, name: str, severity: Severity, why: str) -> None:
        if name == "FORCE_CUDA":  # reading it to choose the build is the portable pattern
            return
        verdict = judge(name)
        if verdict is not None:
            self.report(node, f"{verdict[0]}; {why}", severity=severity)

    def _text(self, expr: cst.BaseExpression | None) -> str | None:
        """A string's value, or an expression's source (`CUDA + "/lib64"`)."""
        if expr is None:
            return None
        value = _string(expr)
        return value if value is not None else self.ctx.module.code_for_node(expr)


def _string(expr: cst.BaseExpression | None) -> str | None:
    if not isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        return None
    value = expr.evaluated_value
    return value if isinstance(value, str) else None

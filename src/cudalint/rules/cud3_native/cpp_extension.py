"""CUD301: CUDA builds through `torch.utils.cpp_extension`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import Invalid
from cudalint.rules import arguments, availability
from cudalint.rules.assignments import TracksAssignments

if TYPE_CHECKING:
    from cudalint.engine.walk.context import PythonContext

_MODULE = "torch.utils.cpp_extension"
_CUDA_EXTENSION = f"{_MODULE}.CUDAExtension"
_CUDA_HOME = f"{_MODULE}.CUDA_HOME"
_CUDA_SOURCES = (".cu", ".cuh")
# Tests that choose the CUDA build only when it can work: `if CUDA_HOME is not None:`,
# `if os.getenv("FORCE_CUDA") == "1":`, `if WITH_CUDA:`.
_BUILD_WORDS = ("cuda_home", "force_cuda", "with_cuda")
_FALLBACK = "; keep a CPU `CppExtension` or a pure-PyTorch fallback"
# Calls that show text (an environment report prints `CUDA_HOME`), and those that only
# make text of a value on the way there.
_MESSAGE_CALLS = frozenset({"print", "debug", "info", "warning", "warn", "error", "log",
                            "write", "echo", "secho", "append_row", "add_row"})
_TEXT_CALLS = frozenset({"str", "repr", "format", "append", "extend", "tabulate"})
_CUDA_HOME_MESSAGE = "`CUDA_HOME` from torch.utils.cpp_extension is None without the CUDA toolkit"
_EXTENSION_MESSAGE = "`CUDAExtension` needs nvcc and the CUDA toolkit" + _FALLBACK


class CudaExtensionBuild(TracksAssignments):
    """
    ## What it does
    Finds CUDA builds with `torch.utils.cpp_extension`: `CUDAExtension` (called, or chosen as
    in `Extension = CUDAExtension if WITH_CUDA else CppExtension`), `load(...)` of `.cu`
    sources (also built by a comprehension, `os.path.join` or a variable), `load_inline(...,
    cuda_sources=...)`, either with `extra_cuda_cflags`, `with_cuda=True`, and `CUDA_HOME` from
    `torch.utils.cpp_extension` used as a path (`os.path.join(CUDA_HOME, "include")`); a test
    such as `CUDA_HOME is not None`, or of its truthiness (`if CUDA_HOME and
    os.path.isdir(...)`), is no finding but a guard, and so is a test of `CUDA_HOME is None`
    (or `not CUDA_HOME`) that warns or skips (`if CUDA_HOME is None:` that warns and
    returns, `pytest.skip(...)`, a `skipif(CUDA_HOME is None, ...)`). Text that only shows
    the value (an environment report: `print("CUDA_HOME:", CUDA_HOME)`,
    `info["CUDA_HOME"] = CUDA_HOME`, `("CUDA_HOME", str(CUDA_HOME))`) is no build.
    An `"nvcc"` entry in `extra_compile_args` (a dict literal, `dict(nvcc=...)`, or
    `extra_compile_args["nvcc"] = [...]` before the call) is reported where it is set, in a
    module that names no `CUDAExtension` (there it says nothing new).

    A CPU `CppExtension` and `load(sources=["op.cpp"])` are not reported, nor is `CUDA_HOME`
    read from the environment (that is CUD502). A CUDA build chosen only when CUDA is there
    (`if torch.cuda.is_available() and CUDA_HOME is not None:`, `FORCE_CUDA`) is guarded.

    ## Why is this bad?
    These builds call `nvcc` and link the CUDA runtime. On a Mac there is neither:
    `CUDA_HOME` is None, the build fails, and the package has no compiled ops.

    ## Example
    ```python
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension

    ext_modules = [CUDAExtension("pkg._C", ["csrc/ops.cpp", "csrc/ops_cuda.cu"])]
    ```

    ## Use instead
    ```python
    from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

    Extension = CUDAExtension if torch.cuda.is_available() else CppExtension
    sources = ["csrc/ops.cpp"] + (["csrc/ops_cuda.cu"] if torch.cuda.is_available() else [])
    ext_modules = [Extension("pkg._C", sources)]
    ```
    with a CPU (or `torch.mps.compile_shader`) implementation of each op, or drop the
    extension for the pure-PyTorch path.
    """

    code = "CUD301"
    name = "cuda-extension-build"
    message = "CUDA build with torch.utils.cpp_extension"
    keywords = ("cpp_extension", "CUDAExtension", "CUDA_HOME", "nvcc")
    VALID = (
        "from torch.utils.cpp_extension import CppExtension\n"
        "ext = CppExtension('pkg._C', ['csrc/ops.cpp'], extra_compile_args={'cxx': ['-O3']})\n",
        "from torch.utils.cpp_extension import load\nops = load(name='ops', sources=['op.cpp'])\n",
        "from torch.utils.cpp_extension import load_inline\n"
        "m = load_inline('m', cpp_sources=[src], functions=['f'])\n",
        "import os\ncuda_home = os.environ.get('CUDA_HOME')\n",
        "print('set CUDA_HOME to build the nvcc kernels')\n",
        "from torch.utils.cpp_extension import BuildExtension\n"
        "cmd = {'build_ext': BuildExtension}\n",
        "from torch.utils.cpp_extension import CUDA_HOME\n"
        "if torch.cuda.is_available() and CUDA_HOME is not None:\n    pass\n"
        "HAS_TOOLKIT = CUDA_HOME is not None\n",
        "from torch.utils.cpp_extension import load\n"
        "srcs = [os.path.join(here, n) for n in ('k.cpp', 'k_cpu.cpp')]\n"
        "ops = load(name='k', sources=srcs)\n",
    )
    INVALID = (
        Invalid("from torch.utils.cpp_extension import CUDAExtension\n"
                "ext = CUDAExtension('pkg._C', ['a.cpp', 'b.cu'],\n"
                "                    extra_compile_args={'cxx': ['-O3'], 'nvcc': ['-O3']})\n"),
        Invalid("import torch.utils.cpp_extension as ce\n"
                "ext = ce.CUDAExtension(name='k', sources=s)\n"),
        Invalid("from torch.utils.cpp_extension import CppExtension\n"
                "ext = CppExtension('k', s, extra_compile_args={'cxx': [], 'nvcc': ['-O3']})\n"),
        Invalid("from torch.utils.cpp_extension import CUDA_HOME\n"
                "nvcc = os.path.join(CUDA_HOME, 'bin', 'nvcc')\n"
                "if CUDA_HOME is None or not torch.cuda.is_available():\n    pass\n"),
        Invalid("from torch.utils import cpp_extension\nhome = cpp_extension.CUDA_HOME\n"),
        Invalid("from torch.utils.cpp_extension import load\n"
                "ops = load(name='ops', sources=['ops.cpp', 'ops_kernel.cu'])\n"),
        Invalid("from torch.utils.cpp_extension import load\n"
                "ops = load('ops', [os.path.join(here, 'kernel.cu')], verbose=True)\n"),
        Invalid("from torch.utils.cpp_extension import load_inline\n"
                "m = load_inline('m', cpp_sources=cpp, cuda_sources=cu, functions=['f'])\n"),
        Invalid("from torch.utils.cpp_extension import load_inline\n"
                "m = load_inline('m', cpp_sources=cpp, extra_cuda_cflags=['-O3'])\n"),
        Invalid("import os\nfrom torch.utils.cpp_extension import load\n"
                "srcs = [os.path.join(here, 'csrc', n) for n in ('k.cpp', 'k_kernel.cu')]\n"
                "ops = load(name='k', sources=srcs)\n"),
        Invalid("from torch.utils.cpp_extension import CppExtension, load\n"
                "jit = load('j', ['j.cpp'], extra_cuda_cflags=['-O3'])\n"
                "args = {'cxx': ['-O3']}\nargs['nvcc'] = ['-O3']\n"
                "ext = CppExtension('k', ['k.cpp'], extra_compile_args=args)\n", count=2),
        Invalid("from torch.utils.cpp_extension import CUDAExtension, CppExtension\n"
                "if CUDA_AVAILABLE:\n    Extension = CUDAExtension\nelse:\n"
                "    Extension = CppExtension\n"),
    )

    def __init__(self, ctx: PythonContext) -> None:
        super().__init__(ctx)
        self._extensions = 0  # CUDAExtension references: nvcc flags add nothing to them
        self._nvcc: list[tuple[cst.CSTNode, bool]] = []

    def visit_Name(self, node: cst.Name) -> None:
        # A name that no import binds is not the imported CUDAExtension or CUDA_HOME.
        if node.value in self.ctx.aliases and self._is_reference(node):
            self._check_reference(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check_reference(node)

    def _check_reference(self, node: cst.Name | cst.Attribute) -> None:
        qualified = self.ctx.qualname(node)
        if qualified == _CUDA_EXTENSION:
            self._extensions += 1
            self._report(node, _EXTENSION_MESSAGE)
        elif qualified == _CUDA_HOME and not self._is_probe() and not self._only_shown():
            self._report(node, _CUDA_HOME_MESSAGE)

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.call_name(node)
        if qualified == f"{_MODULE}.load" and self._loads_cuda(node):
            self._report(node, "`load(...)` compiles CUDA sources with nvcc" + _FALLBACK)
        elif qualified == f"{_MODULE}.load_inline" and _inlines_cuda(node):
            self._report(node, "`load_inline(...)` with CUDA sources or flags compiles CUDA with "
                                     "nvcc; on a Mac, `torch.mps.compile_shader` runs Metal")
        elif _is_call_to(node, "dict") and arguments.argument(node, None, "nvcc") is not None:
            self._note_nvcc(next(a for a in node.args if _keyword(a) == "nvcc"))

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if arguments.string_value(node.key) == "nvcc":
            self._note_nvcc(node.key)

    def visit_SubscriptElement(self, node: cst.SubscriptElement) -> None:
        index = node.slice
        if isinstance(index, cst.Index) and arguments.string_value(index.value) == "nvcc":
            self._note_nvcc(index.value)

    def leave_Module(self, original_node: cst.Module) -> None:
        if self._extensions:
            return
        for node, guarded in self._nvcc:
            self.report(node, "`nvcc` flags: this build compiles CUDA" + _FALLBACK,
                        guarded=guarded)

    def _note_nvcc(self, node: cst.CSTNode) -> None:
        self._nvcc.append((node, self._guarded()))

    def _loads_cuda(self, node: cst.Call) -> bool:
        if _with_cuda(node) or arguments.argument(node, None, "extra_cuda_cflags") is not None:
            return True
        sources = arguments.argument(node, 1, "sources")
        if sources is None:
            return False
        sources, _ = self.resolve(sources)  # `srcs = [os.path.join(d, f) for f in ...]`
        return any(part.endswith(_CUDA_SOURCES) for part in arguments.string_parts(sources))

    def _report(self, node: cst.CSTNode, message: str) -> None:
        self.report(node, message, guarded=self._guarded())

    def _guarded(self) -> bool:
        return self.ctx.is_guarded() or availability.under_check(self.ctx, _BUILD_WORDS)

    def _is_reference(self, node: cst.Name) -> bool:
        """A use of the name, not an import or a binding of it or the attribute of `x.name`."""
        parent = self.ctx.parent()
        if isinstance(parent, (cst.ImportAlias, cst.ImportFrom, cst.AssignTarget)):
            return False
        return not (isinstance(parent, cst.Attribute) and parent.attr is node)

    def _only_shown(self) -> bool:
        """`print("CUDA_HOME:", CUDA_HOME)`, `info["CUDA_HOME"] = CUDA_HOME`,
        `("CUDA_HOME", str(CUDA_HOME))`: text that shows the value (an environment report),
        through `str()`, f-strings and formatting; not a path built from it, nor an `env=`
        given to a build."""
        child = self.ctx.stack[-1]
        for node in self.ctx.ancestors():
            if isinstance(node, cst.Call):
                leaf = _call_leaf(node)
                if leaf in _MESSAGE_CALLS:
                    return True
                if leaf not in _TEXT_CALLS:
                    return False
            elif isinstance(node, cst.Arg) and _keyword(node) == "env":
                return False
            elif isinstance(node, cst.DictElement):
                if node.value is not child or arguments.string_value(node.key) is None:
                    return False
                return not self._in_env_argument()
            elif isinstance(node, cst.Tuple) and child is not node.elements[0]:
                return arguments.string_value(node.elements[0].value) is not None
            elif isinstance(node, cst.Assign):
                return node.value is child and all(self._labelled(t.target)
                                                   for t in node.targets)
            elif isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return False
            child = node
        return False

    def _in_env_argument(self) -> bool:
        return any(isinstance(node, cst.Arg) and _keyword(node) == "env"
                   for node in self.ctx.ancestors())

    def _labelled(self, target: cst.BaseExpression) -> bool:
        """`info["CUDA_HOME"]`: an entry of a table, not `os.environ[...]`."""
        if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
            return False
        index = target.slice[0].slice
        return isinstance(index, cst.Index) and arguments.string_value(index.value) is not None \
            and self.ctx.qualname(target.value) != "os.environ"

    def _is_probe(self) -> bool:
        """`CUDA_HOME is not None`, `if CUDA_HOME:`: a test, not a path; except in `assert`."""
        child = self.ctx.stack[-1]
        for node in self.ctx.ancestors():
            if isinstance(node, cst.Assert):
                return False
            if isinstance(node, (cst.Comparison, cst.ComparisonTarget)):
                return True
            if isinstance(node, (cst.If, cst.IfExp, cst.While)):
                return node.test is child
            passes_through = isinstance(node, cst.BooleanOperation) or (
                isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not))
            if not passes_through:
                return False
            child = node
        return False


def _call_leaf(call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else None


def _keyword(arg: cst.Arg) -> str | None:
    return arg.keyword.value if arg.keyword is not None else None


def _is_call_to(node: cst.Call, name: str) -> bool:
    return isinstance(node.func, cst.Name) and node.func.value == name


def _with_cuda(node: cst.Call) -> bool:
    flag = arguments.argument(node, None, "with_cuda")
    return isinstance(flag, cst.Name) and flag.value == "True"


def _inlines_cuda(node: cst.Call) -> bool:
    if _with_cuda(node) or arguments.argument(node, None, "extra_cuda_cflags") is not None:
        return True
    cuda_sources = arguments.argument(node, 2, "cuda_sources")
    if cuda_sources is None:
        return False
    empty = isinstance(cuda_sources, (cst.List, cst.Tuple)) and not cuda_sources.elements
    return not empty and not (isinstance(cuda_sources, cst.Name) and cuda_sources.value == "None")

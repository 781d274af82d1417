"""CUD202: the CUDA-only parts of portable libraries (the table in data/gpu_apis.toml)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

import libcst as cst

from cudalint.engine.contract import Invalid, PythonRule
from cudalint.engine.first_pass.prefilter import LETTER_ESCAPE, Terms, caseless, word
from cudalint.finding import Severity
from cudalint.rules import arguments, availability, imported, tables

if TYPE_CHECKING:
    from cudalint.engine.walk.context import Settings

# Tests that mean "a GPU is there": `if use_gpu:`, `if faiss.get_num_gpus():`,
# `if "CUDAExecutionProvider" in ort.get_available_providers():`.
_GPU_WORDS = ("gpu", "cuda")
# A string whose value may be jax's GPU backend (`_backend`: lower-cased, "gpu" or "cuda"),
# written out or through an escape, or an import (of jax, under another name).
_BACKEND_OR_IMPORT = (
    rf"['\"](?:{caseless('gpu')}|{caseless('cuda')})['\"]|{LETTER_ESCAPE.pattern}|{word('import')}"
)


@dataclass(frozen=True, eq=False)
class _Entry:
    library: str
    why: str
    alternative: str
    severity: Severity
    raw: dict[str, Any]

    def message(self, subject: str) -> str:
        return f"{subject} {self.why}; use {self.alternative}"


@cache
def _entries(section: str) -> tuple[_Entry, ...]:
    return tuple(
        _Entry(e["library"], e["why"], e["alternative"], Severity[e["severity"].upper()], e)
        for e in tables.load("gpu_apis.toml")[section]
    )


@lru_cache(maxsize=4096)  # asked for every call of a file: the same names, many times
def _by_name(qualified: str | None) -> _Entry | None:
    if qualified is None:
        return None
    return next((e for e in _entries("names")
                 if any(fnmatch.fnmatchcase(qualified, g) for g in e.raw["match"])), None)


def _provider(value: str) -> _Entry | None:
    return next((e for e in _entries("providers") if value in e.raw["values"]), None)


@cache
def _provider_names() -> tuple[str, ...]:
    return tuple(v for e in _entries("providers") for v in e.raw["values"])


class CudaOnlyLibraryUse(PythonRule):
    """
    ## What it does
    Finds the CUDA-only parts of libraries that otherwise run on a Mac:
    faiss's GPU API (`faiss.StandardGpuResources`, `faiss.index_cpu_to_gpu`,
    `index_cpu_to_all_gpus`, `faiss.GpuIndexFlatL2`, ...), onnxruntime's
    `CUDAExecutionProvider`/`TensorrtExecutionProvider` in a provider list, and jax's GPU
    backend (`jax.devices("gpu")`, `jax.devices(backend="cuda")`).

    Provider names in messages, log lines and comparisons
    (`if "CUDAExecutionProvider" in ort.get_available_providers():`) are not reported, nor
    are backend checks (`jax.default_backend() == "gpu"`, `faiss.get_num_gpus()`): such a
    test, like `if use_gpu:`, marks its branch as guarded.

    ## Why is this bad?
    faiss-cpu, the only faiss for macOS, has no GPU classes: the call raises `AttributeError`.
    onnxruntime without CUDA warns and runs the model on the CPU, skipping the CoreML provider
    that would use the Mac's GPU. jax raises `RuntimeError: Unknown backend gpu`.

    ## Example
    ```python
    res = faiss.StandardGpuResources()
    index = faiss.index_cpu_to_gpu(res, 0, index)
    session = ort.InferenceSession(path, providers=["CUDAExecutionProvider"])
    ```

    ## Use instead
    ```python
    if faiss.get_num_gpus():
        index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)
    session = ort.InferenceSession(path, providers=ort.get_available_providers())
    ```
    """

    code = "CUD202"
    follows_assignments = False
    name = "cuda-only-library-use"
    site_severities = (Severity.WARNING,)
    message = "CUDA-only use of a portable library"
    keywords = ("faiss", "ExecutionProvider")
    VALID = (
        "import faiss\nindex = faiss.IndexFlatL2(64)\nn = faiss.get_num_gpus()\n",
        "import onnxruntime as ort\n"
        "s = ort.InferenceSession(p, providers=['CoreMLExecutionProvider', "
        "'CPUExecutionProvider'])\n",
        "if 'CUDAExecutionProvider' in ort.get_available_providers():\n    pass\n",
        "print('falling back from CUDAExecutionProvider')\n"
        "log.info('providers: %s', 'CUDAExecutionProvider')\n",
        "i = providers.index('CUDAExecutionProvider')\n",
        "import jax\ndevs = jax.devices()\ncpu = jax.devices('cpu')\n",
        "if jax.default_backend() == 'gpu':\n    pass\n",
        "StandardGpuResources = None\nres = StandardGpuResources()\n",
    )
    INVALID = (
        Invalid("import faiss\nres = faiss.StandardGpuResources()\n"
                "index = faiss.index_cpu_to_gpu(res, 0, index)\n", count=2),
        Invalid("import faiss as fs\nindex = fs.GpuIndexFlatL2(res, 64)\n"),
        Invalid("from faiss import StandardGpuResources, IndexFlatL2\n"
                "res = StandardGpuResources()\n"),
        Invalid("import faiss\ngpu_index = faiss.index_cpu_to_all_gpus(index)\n"),
        Invalid("import onnxruntime as ort\n"
                "s = ort.InferenceSession(p, providers=['CUDAExecutionProvider', "
                "'CPUExecutionProvider'])\n"),
        Invalid("providers = [('CUDAExecutionProvider', {'device_id': 0}), "
                "'TensorrtExecutionProvider']\n", count=2),
        Invalid("provider = 'CUDAExecutionProvider'\n"),
        Invalid("import jax\ngpus = jax.devices('gpu')\n"),
        Invalid("import jax\nx = jax.device_put(x, jax.devices(backend='cuda')[0])\n"),
        Invalid("import jax\nf = jax.jit(f, backend='gpu')\n"),
        Invalid("import faiss\nif use_gpu:\n    index = faiss.index_cpu_to_gpu(res, 0, index)\n"),
    )

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """faiss's GPU API and the providers by their names; jax's backend where a text
        names jax and a string the backend may be (`"gpu"`, `'CUDA'`, an escape), or imports
        it (an alias of `jax` or of `jax.devices` is followed): not any use of jax."""
        return Terms(cls.keywords, together=((word("jax"), _BACKEND_OR_IMPORT),))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or isinstance(node.names, cst.ImportStar):
            return
        base = imported.dotted(node.module)
        for alias in node.names:
            qualified = f"{base}.{imported.dotted(alias.name)}"
            entry = _by_name(qualified)
            if entry is not None:
                self._report(alias, entry, f"`{qualified}`")

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.call_name(node)
        # A name imported with `from faiss import X` was reported at its import.
        entry = _by_name(qualified) if isinstance(node.func, cst.Attribute) else None
        if entry is not None:
            self._report(node, entry, f"`{qualified}`")
            return
        entry = self._backend(node, qualified)
        if entry is not None:
            self._report(node, entry, f"`{qualified}(...)` on the CUDA backend")

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if "\\" not in node.value and not any(v in node.value for v in _provider_names()):
            return  # the literal spells no provider (evaluating every string costs)
        value = node.evaluated_value
        if not isinstance(value, str):
            return
        entry = _provider(value)
        if entry is not None and self._in_provider_list():
            self._report(node, entry, f"`{value}`")

    def _backend(self, node: cst.Call, qualified: str | None) -> _Entry | None:
        for entry in _entries("backends"):
            if qualified not in entry.raw["calls"]:
                continue
            value = arguments.string_value(
                arguments.argument(node, entry.raw.get("position"), entry.raw["keyword"]))
            if value is not None and value.lower() in entry.raw["values"]:
                return entry
        return None

    def _in_provider_list(self) -> bool:
        """A provider list's element, a `providers=` argument, a `provider` variable."""
        parent = self.ctx.parent()
        if isinstance(parent, cst.Element):
            return True
        if isinstance(parent, cst.Arg):
            return parent.keyword is not None and parent.keyword.value.startswith("provider")
        if isinstance(parent, cst.Assign):
            return any(_names_provider(t.target) for t in parent.targets)
        if isinstance(parent, cst.AnnAssign):
            return _names_provider(parent.target)
        return False

    def _report(self, node: cst.CSTNode, entry: _Entry, subject: str) -> None:
        guarded = self.ctx.is_guarded() or availability.under_check(self.ctx, _GPU_WORDS)
        self.report(node, entry.message(subject), severity=entry.severity, guarded=guarded)


def _names_provider(target: cst.BaseExpression) -> bool:
    return "provider" in imported.dotted(target).lower()

"""CUD201: imports of CUDA-only packages (the table in data/cuda_packages.toml)."""

from __future__ import annotations

import libcst as cst

from cudalint import packages
from cudalint.engine.contract import Invalid, PythonRule
from cudalint.engine.first_pass.prefilter import Terms
from cudalint.engine.walk.context import Settings
from cudalint.finding import Severity
from cudalint.rules import availability, imported


def _roots() -> frozenset[str]:
    return frozenset(root.split(".")[0] for p in packages.load_packages() for root in p.imports)


def _message(module: str, package: packages.CudaPackage) -> str:
    subject = f"`{module}`" if module == package.name else f"`{module}` ({package.name})"
    if package.severity is Severity.ERROR:
        return f"{subject} needs an NVIDIA GPU; use {package.alternative}"
    return f"{subject} only partly works off CUDA: {package.alternative}"


class CudaOnlyImport(PythonRule):
    """
    ## What it does
    Finds imports of packages that only work with CUDA: cupy, `numba.cuda`, pycuda, triton,
    flash-attn, xformers, apex, pynvml, TensorRT, DALI, RAPIDS (cudf, cuml, cugraph),
    mamba-ssm, transformer-engine, vllm, deepspeed, GPU kernel DSLs and others. Each message
    names the portable alternative. Aliases and submodules count (`import cupy as cp`,
    `from numba import cuda`, `import nvidia.dali.fn as fn`, `importlib.import_module("cupy")`);
    the project's own packages never do, even when named like one (as ruff's
    `known-first-party`: at the root or in `src/`, a package `apex/`, a module `pynvml.py`, a
    folder of Python files without `__init__.py`; the `[project]` name, `known-first-party`).
    A folder of no Python file (`cuda/` of kernels), or one that is a project of its own (a
    clone of apex with its setup.py), is not the project's.

    `import numba` alone is not reported: numba's CPU JIT is portable. bitsandbytes is reported
    as a warning, since it partly works on a Mac.

    An import in `try: ... except ImportError:` whose handler falls back, under
    `torch.cuda.is_available()` or under a test for the package itself (`if HAS_FLASH_ATTN:`,
    `if is_triton_available():`, `if TYPE_CHECKING:`) is reported as guarded, one severity
    lower. A handler that only raises (`except ImportError: raise RuntimeError("install
    triton")`) or stops the program makes the import required: not guarded.

    ## Why is this bad?
    These packages have no macOS wheels, or import only where an NVIDIA driver is installed:
    on a Mac the import fails and takes the whole module with it.

    ## Example
    ```python
    from flash_attn import flash_attn_func

    out = flash_attn_func(q, k, v, causal=True)
    ```

    ## Use instead
    ```python
    import torch.nn.functional as F

    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    ```
    or keep the CUDA path optional:
    ```python
    try:
        from flash_attn import flash_attn_func
    except ImportError:
        flash_attn_func = None
    ```
    """

    code = "CUD201"
    follows_assignments = False
    name = "cuda-only-import"
    site_severities = (Severity.WARNING,)
    message = "import of a CUDA-only package"
    keywords = tuple(sorted(_roots()))
    VALID = (
        "import numba\n",
        "from numba import njit, prange\n",
        "import numpy as np\nimport torch.nn.functional as F\n",
        "from . import triton\nfrom .cupy import helpers\n",
        "import triton_utils\nimport cupy_compat\n",
        "from torch import cuda\n",
        '"""Uses cupy when available."""\n# import cupy\nprint("install flash_attn for speed")\n',
        'BACKENDS = {"triton": 1, "cupy": 2}\n',
        'spec = importlib.util.find_spec("flash_attn")\n',
        "try:\n    import numpy as np\nexcept ImportError:\n"
        "    raise RuntimeError('install numpy')\n",
    )
    INVALID = (
        Invalid("import cupy as cp\n"),
        Invalid("from numba import cuda\n"),
        Invalid("import numba.cuda\n"),
        Invalid("from numba import cuda, njit\n"),
        Invalid("from cupyx.scipy import ndimage\n"),
        Invalid("import nvidia.dali.fn as fn\nfrom nvidia.dali import pipeline_def\n", count=2),
        Invalid("import triton\nimport triton.language as tl\n", count=2),
        Invalid("import cupy, flash_attn\n", count=2),
        Invalid("from flash_attn.flash_attn_interface import flash_attn_func\n"),
        Invalid("try:\n    import xformers.ops as xops\nexcept ImportError:\n    xops = None\n",
                guarded=True),
        Invalid(
            "try:\n    import triton\n    import triton.language as tl\nexcept ImportError:\n"
            "    raise RuntimeError('the fused kernels need triton: pip install triton')\n",
            count=2,
            guarded=False,
        ),
        Invalid(
            "import sys\ntry:\n    import cupy as cp\nexcept ImportError as error:\n"
            "    print('cupy is required', error)\n    sys.exit(1)\n",
            guarded=False,
        ),
        Invalid("if HAS_APEX:\n    from apex.optimizers import FusedAdam\n"),
        Invalid("import bitsandbytes as bnb\n"),
        Invalid('cp = importlib.import_module("cupy")\n'),
        Invalid("def attention(q, k, v):\n    from flash_attn import flash_attn_func\n"
                "    return flash_attn_func(q, k, v)\n"),
    )

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """Package roots as whole names (`cute` must not match `execute`), where the code
        imports something (`import`, `import_module("x")`, `__import__("x")`): a function that
        only uses an imported package reports nothing here. `import_module` itself, so that an
        alias of it (`from importlib import import_module as load`) is followed. The import is
        the finding: the names it binds (`from cutlass import Float32`) are followed by none."""
        return Terms(words=frozenset({"import_module"}), calls=_roots(), quiet=_roots())

    def visit_Import(self, node: cst.Import) -> None:
        for found in imported.from_import(node, self._is_cuda_only):
            self._report(found)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative:
            return
        base = imported.dotted(node.module)
        for found in imported.from_import_from(node, base, self._is_cuda_only):
            self._report(found)

    def visit_Call(self, node: cst.Call) -> None:
        found = imported.dynamic_import(self.ctx, node)
        if found is not None and self._is_cuda_only(found.module):
            self._report(found)

    def _is_cuda_only(self, module: str) -> bool:
        return packages.by_import(module) is not None and not self._is_first_party(module)

    def _is_first_party(self, module: str) -> bool:
        return any(module == own or module.startswith(own + ".")
                   for own in self.ctx.settings.first_party)

    def _report(self, found: imported.Imported) -> None:
        package = packages.by_import(found.module)
        if package is None:
            return
        words = (*availability.library_words(package.imports), "type_checking")
        guarded = self.ctx.is_guarded() or availability.under_check(self.ctx, words)
        self.report(found.node, _message(found.module, package), severity=package.severity,
                    guarded=guarded)

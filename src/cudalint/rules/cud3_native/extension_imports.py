"""CUD305: imports of the project's own compiled CUDA extension."""

from __future__ import annotations

import libcst as cst

from cudalint.engine.contract import Invalid, PythonRule, Valid
from cudalint.engine.first_pass.prefilter import Terms
from cudalint.engine.walk.context import Settings
from cudalint.rules import imported


class CudaExtensionImport(PythonRule):
    """
    ## What it does
    Finds imports of the project's own compiled CUDA extension: a module that a
    `CUDAExtension(name=...)` in any setup.py of the tree builds (read, never run; the name
    may come from a constant or an f-string), or a setuptools `Extension` with `.cu` sources:
    the project's own, and that of each per-extension folder among the files checked
    (`ext_a/setup.py` building `_ext_a`, imported as `import _ext_a as _backend` from
    `ext_a/ext_a.py`): the main path needs the CUDA build. With
    `CUDAExtension("pkg._C", ...)`: `import pkg._C`, `from pkg import _C`,
    `from pkg._C import nms`, `from . import _C` inside `pkg/`, and
    `importlib.import_module("pkg._C")`.

    Modules built by a `CppExtension` and imports in a project without a setup.py are not
    reported. An import in `try: ... except ImportError:` whose handler falls back is
    guarded; one whose handler only raises (or exits) is not: the import is required there.

    ## Why is this bad?
    The module exists only where the package was built with nvcc. On a Mac the build fails or
    is skipped, and the import raises `ImportError` (or, for a wheel built on Linux, cannot
    load `libcudart`): every code path through the import is CUDA-only.

    ## Example
    ```python
    from . import _C

    def nms(boxes, scores, threshold):
        return _C.nms(boxes, scores, threshold)
    ```

    ## Use instead
    ```python
    try:
        from . import _C
    except ImportError:
        _C = None

    def nms(boxes, scores, threshold):
        if _C is not None and boxes.is_cuda:
            return _C.nms(boxes, scores, threshold)
        return torchvision.ops.nms(boxes, scores, threshold)
    ```
    """

    code = "CUD305"
    follows_assignments = False
    name = "cuda-extension-import"
    message = "import of the project's compiled CUDA extension"
    keywords = ("import",)
    # The examples are setup.py files, the only file an example can bring: real imports of
    # the extension live in the package (tests/rules/cud3/ has those).
    VALID = (
        "from pkg import _C\nimport pkg._C\n",
        Valid("from torch.utils.cpp_extension import CppExtension\n"
              "ext_modules = [CppExtension('pkg._C', ['csrc/ops.cpp'])]\n"
              "from pkg import _C\n", path="setup.py"),
        Valid("from torch.utils.cpp_extension import CUDAExtension\n"
              "ext_modules = [CUDAExtension('pkg._C', ['csrc/nms.cu'])]\n"
              "import pkg\nfrom pkg import utils\nimport pkg_C\n", path="setup.py"),
    )
    INVALID = (
        Invalid("from torch.utils.cpp_extension import CUDAExtension\n"
                "ext_modules = [CUDAExtension('pkg._C', ['csrc/nms.cu'])]\n"
                "from pkg import _C\n", path="setup.py"),
        Invalid("from torch.utils.cpp_extension import CUDAExtension\n"
                "ext_modules = [CUDAExtension(name='fused_adam_cuda', sources=['adam.cu'])]\n"
                "import fused_adam_cuda\nfrom fused_adam_cuda import step\n"
                "m = importlib.import_module('fused_adam_cuda')\n", path="setup.py", count=3),
        # a per-extension folder's own setup.py (ext_a/setup.py) names an extension too
        Invalid("from torch.utils.cpp_extension import CUDAExtension\n"
                "ext_modules = [CUDAExtension(name='_ext_a', sources=['ext_a_kernel.cu'])]\n"
                "import _ext_a as _backend\n", path="ext_a/setup.py"),
    )

    settings_terms = True

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """The extension's own name (`_C` of `pkg._C`) stands in any file importing it; a
        project without a CUDA extension has nothing to find."""
        return Terms(words=frozenset(name.rsplit(".", 1)[-1]
                                     for name in settings.extension_modules))

    def visit_Import(self, node: cst.Import) -> None:
        for found in imported.from_import(node, self._is_extension):
            self._report(found)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not self.ctx.settings.extension_modules:
            return  # resolving a relative import reads the file system
        base = imported.absolute_base(self.ctx, node)
        for found in imported.from_import_from(node, base, self._is_extension):
            self._report(found)

    def visit_Call(self, node: cst.Call) -> None:
        found = imported.dynamic_import(self.ctx, node)
        if found is not None and self._is_extension(found.module):
            self._report(found)

    def _is_extension(self, module: str) -> bool:
        extensions = self.ctx.settings.extension_modules
        if not module.startswith("."):
            return any(module == e or module.startswith(e + ".") for e in extensions)
        # A relative import outside a package we could resolve: match the tail.
        tail = module.lstrip(".")
        return bool(tail) and any(e == tail or e.endswith("." + tail) for e in extensions)

    def _report(self, found: imported.Imported) -> None:
        advice = ("keep the PyTorch fallback for where it is missing" if self.ctx.is_guarded()
                  else "import it in `try/except ImportError` with a PyTorch fallback")
        self.report(found.node, f"`{found.module}` is the project's CUDA extension (setup.py): "
                                f"it exists only where the package was built with CUDA; {advice}")

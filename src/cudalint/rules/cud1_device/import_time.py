"""CUD109: `torch.cuda` calls that raise without CUDA, made while the module is imported."""

from __future__ import annotations

from cudalint.engine.contract import Invalid
from cudalint.finding import Severity
from cudalint.rules.cud1_device import references
from cudalint.rules.cud1_device.references import ApiUse, ApiUseRule

_FAMILY = "CUD1"  # calls owned by other families (torch.cuda.jiterator: CUD303) stay theirs


class ImportTimeCudaCall(ApiUseRule):
    """
    ## What it does
    Finds calls that raise without CUDA (`torch.cuda.get_device_capability()`,
    `get_device_name()`, `synchronize()`, `set_device()`, `current_device()`,
    `torch.cuda.Stream()`, `torch.cuda.FloatTensor(...)`, NVTX, ...) made when the module is
    imported: at module or class level, in a decorator or a default argument, not inside a
    function and not under `if __name__ == "__main__":`. Availability probes
    (`torch.cuda.is_available()`, `device_count()`) and calls that merely do nothing off CUDA
    are not reported, nor calls in a `try` whose handler catches `Exception`.

    ## Why is this bad?
    The import itself fails on a Mac, so nothing in the module (or anything importing it) can
    run or even be tested there, including the parts that never touch the GPU.

    ## Example
    ```python
    import torch

    CAPABILITY = torch.cuda.get_device_capability()
    ```

    ## Use instead
    ```python
    import functools

    import torch


    @functools.cache
    def capability():
        return torch.cuda.get_device_capability() if torch.cuda.is_available() else None
    ```
    """

    code = "CUD109"
    name = "cuda-call-at-import"
    message = "CUDA call at import time"
    severity = Severity.ERROR
    words = frozenset({"cuda"})
    VALID = (
        "import torch\nN = torch.cuda.device_count()\n",
        "import torch\nOK = torch.cuda.is_available()\n",
        "import torch\ntorch.cuda.manual_seed(0)\n",
        "import torch\n\ndef name():\n    return torch.cuda.get_device_name()\n",
        "import torch\n\nif __name__ == '__main__':\n    torch.cuda.synchronize()\n",
        "import torch\nf = lambda: torch.cuda.synchronize()\n",
        "import torch\ntry:\n    CAP = torch.cuda.get_device_capability()\n"
        "except Exception:\n    CAP = None\n",
        "import torch\nSYNC = torch.cuda.synchronize\n",
        'print("torch.cuda.synchronize()")\n',
    )
    INVALID = (
        Invalid("import torch\nCAP = torch.cuda.get_device_capability()\n"),
        Invalid("import torch\ntorch.cuda.set_device(0)\n"),
        Invalid("import torch\n\nclass Config:\n    gpu = torch.cuda.get_device_name(0)\n"),
        Invalid("import torch\n\ndef run(device=torch.cuda.current_device()):\n    pass\n"),
        Invalid("from torch.cuda import synchronize\nsynchronize()\n"),
        Invalid("import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n"),
        Invalid("import torch\nx = torch.cuda.FloatTensor(3)\n"),
    )

    def check_use(self, use: ApiUse) -> None:
        if use.call is None or not use.api.raises:
            return
        if use.api.code is None or not use.api.code.startswith(_FAMILY):
            return
        if not references.runs_at_import(self.ctx):
            return
        self.report(use.call, f"`{use.name}()` runs when the module is imported and raises "
                              "without CUDA: importing the module fails on a Mac")

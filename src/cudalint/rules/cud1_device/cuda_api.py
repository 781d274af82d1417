"""CUD105: `torch.cuda.*` calls with a portable function beside pick_device()."""

from __future__ import annotations

import libcst as cst

from cudalint.engine.contract import Invalid, NodeFix
from cudalint.finding import Severity
from cudalint.rules.cud1_device import cuda_api_table, helper_imports
from cudalint.rules.cud1_device.cuda_api_fixes import fits
from cudalint.rules.cud1_device.references import ApiUse, ApiUseRule


class PortableCudaCall(ApiUseRule):
    """
    ## What it does
    Finds `torch.cuda` calls that have a portable function in the helper module: the ones
    that raise without CUDA (`synchronize`, `set_device`, `current_device`, `get_device_name`,
    `Event`, `get_rng_state`, `reset_peak_memory_stats`) and the ones that silently do nothing
    there (`manual_seed`, `manual_seed_all`, `set_rng_state`, `empty_cache`, the memory
    queries, `device_count`), also through aliases (`import torch.cuda as tc`,
    `from torch.cuda import synchronize`). The severity is each call's own: a raising call is
    an error, a seed that is silently not set a warning, a memory query that reads 0 info.

    ## Why is this bad?
    On a Mac `torch.cuda.synchronize()` raises `AssertionError: Torch not compiled with CUDA
    enabled`; `torch.cuda.manual_seed(0)` does nothing, so runs are not reproducible;
    `torch.cuda.max_memory_allocated()` reports 0.

    ## Example
    ```python
    torch.cuda.manual_seed(0)
    start = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    print(torch.cuda.max_memory_allocated() / 2**20)
    ```

    ## Use instead
    ```python
    from cudalint.device import Event, manual_seed, max_memory_allocated, synchronize

    manual_seed(0)
    start = Event(enable_timing=True)
    synchronize()
    print(max_memory_allocated() / 2**20)
    ```

    ## Fix safety
    Safe: on CUDA each helper makes exactly the `torch.cuda` call with the same arguments; on
    a Mac it makes the `torch.mps` one, on CPU it does nothing or returns 0. `manual_seed`
    seeds the accelerator only (never `torch.manual_seed`, which also reseeds the CPU
    generator). A call whose arguments the helper does not take is not fixed. The fix of
    `device_count()` is unsafe: it is 1 on a Mac where `torch.cuda.device_count()` is 0, so a
    branch that tested it starts running there.
    """

    code = "CUD105"
    name = "cuda-call-with-portable-helper"
    message = "`torch.cuda` call with a portable equivalent"
    severity = Severity.ERROR
    site_severities = (Severity.WARNING, Severity.INFO)
    words = frozenset({"cuda"})
    VALID = (
        "if torch.cuda.is_available():\n    pass\n",
        "from cudalint.device import synchronize\nsynchronize()\n",
        'print("call torch.cuda.synchronize() first")\n',
        'def f():\n    """Calls torch.cuda.synchronize()."""\n',
        "# torch.cuda.empty_cache()\nx = 1\n",
        "stream.synchronize()\n",
        "torch.mps.synchronize()\n",
        "torch.cuda.get_device_capability()\n",
        "torch.cuda.synchronize = lambda: None\n",
        'monkeypatch.setattr("torch.cuda.synchronize", fake)\n',
        "def f(x: torch.cuda.Event) -> None:\n    pass\n",
    )
    INVALID = (
        Invalid(
            "import torch\ntorch.cuda.synchronize()\n",
            "from cudalint.device import synchronize\n\nsynchronize()\n",
        ),
        Invalid(
            "import torch\n\ndef seed(s):\n    torch.cuda.manual_seed_all(s)\n",
            "from cudalint.device import manual_seed_all\n\n"
            "def seed(s):\n    manual_seed_all(s)\n",
        ),
        Invalid(
            "import torch.cuda as tc\n\ndef free():\n    tc.empty_cache()\n",
            "from cudalint.device import empty_cache\n\n"
            "def free():\n    empty_cache()\n",
        ),
        Invalid(
            "from torch.cuda import synchronize\n\ndef step():\n    synchronize()\n",
            "from cudalint.device import synchronize\n\ndef step():\n    synchronize()\n",
        ),
        Invalid(
            "from torch.cuda import memory_cached as mc, synchronize\n"
            "print(mc(0))\nsynchronize()\n",
            "from cudalint.device import memory_reserved as mc, synchronize\n"
            "print(mc(0))\nsynchronize()\n",
            count=2,
        ),
        Invalid(
            "import torch\nstart = torch.cuda.Event(enable_timing=True)\n",
            "from cudalint.device import Event\n\n"
            "start = Event(enable_timing=True)\n",
        ),
        Invalid(
            "import torch\n\ndef peak(dev):\n"
            "    return torch.cuda.max_memory_allocated(device=dev)\n",
            "from cudalint.device import max_memory_allocated\n\n"
            "def peak(dev):\n    return max_memory_allocated(device=dev)\n",
        ),
        Invalid(
            "import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n",
            "import torch\nfrom cudalint.device import synchronize\n\n"
            "if torch.cuda.is_available():\n    synchronize()\n",
        ),
        Invalid(
            "import torch\nn = torch.cuda.device_count()\n",
            "from cudalint.device import device_count\n\nn = device_count()\n",
            unsafe=True,
        ),
        # The helper takes no device: reported, not fixed.
        Invalid("import torch\nstate = torch.cuda.get_rng_state('cuda:1')\n"),
        # A parameter named like the helper would shadow it.
        Invalid("import torch\n\ndef step(synchronize=True):\n"
                "    if synchronize:\n        torch.cuda.synchronize()\n"),
        # `Event` also reaches isinstance: the import cannot move.
        Invalid("from torch.cuda import Event\ne = Event()\nok = isinstance(e, Event)\n",
                count=2),
        # An early exit whose test is an `or` of a probe and something else guards the rest
        # of its block; with an `and` it returns only where both are missing: no guard.
        Invalid(
            "import torch\n\ndef sync(q, flash):\n"
            "    if not torch.cuda.is_available() or not flash:\n        return q\n"
            "    torch.cuda.synchronize()\n    return q\n",
            "import torch\nfrom cudalint.device import synchronize\n\ndef sync(q, flash):\n"
            "    if not torch.cuda.is_available() or not flash:\n        return q\n"
            "    synchronize()\n    return q\n",
            guarded=True,
        ),
        Invalid(
            "import torch\n\ndef sync(q, flash):\n"
            "    if not torch.cuda.is_available() and not flash:\n        return q\n"
            "    torch.cuda.synchronize()\n    return q\n",
            "import torch\nfrom cudalint.device import synchronize\n\ndef sync(q, flash):\n"
            "    if not torch.cuda.is_available() and not flash:\n        return q\n"
            "    synchronize()\n    return q\n",
            guarded=False,
        ),
    )

    def check_use(self, use: ApiUse) -> None:
        if use.api.code != self.code:
            return
        self.report(use.call or use.node, use.api.message_for(use.name),
                    severity=use.api.severity, fix=self._fix(use))

    def _fix(self, use: ApiUse) -> NodeFix | None:
        api, helper = use.api, use.api.helper
        if helper is None or use.call is None or not fits(api.params, use.call.args):
            return None
        if isinstance(use.node, cst.Name):
            fix = helper_imports.import_fix(self.ctx, use.node.value)
        elif self.ctx.helper_available(helper):
            fix = NodeFix(use.node, cst.Name(helper), f"Replace with `{helper}()`",
                          helpers=(helper,))
        elif self._imported_from_torch_cuda(helper):
            # `from torch.cuda import synchronize` holds the name: move that import first;
            # the next pass replaces this call.
            fix = helper_imports.import_fix(self.ctx, helper)
        else:
            return None
        if fix is None:
            return None
        return NodeFix(fix.target, fix.replacement, fix.message, api.applicability,
                       fix.helpers, fix.imports)

    def _imported_from_torch_cuda(self, helper: str) -> bool:
        """The module imports the helper's name from torch.cuda, as the same function."""
        bound = self.ctx.aliases.get(helper)
        api = cuda_api_table.lookup(bound) if bound else None
        return api is not None and api.helper == helper and \
            not self.ctx.bound_locally(helper)

"""CUD702: data parallelism that only works across CUDA GPUs."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cudalint.engine.contract import Invalid
from cudalint.engine.first_pass.prefilter import Terms, word
from cudalint.engine.walk import guards
from cudalint.engine.walk.context import Settings
from cudalint.finding import Severity
from cudalint.rules.assignments import TracksAssignments

_DATA_PARALLEL = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
    }
)
_DATA_PARALLEL_FUNCTIONS = frozenset(
    {"torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.data_parallel"}
)
_DDP = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
    }
)
_DDP_DEVICE_PARAMETERS = ("device_ids", "output_device")  # after `module`, in this order
_WRAPPER_MESSAGE = (
    "`nn.DataParallel` splits batches over CUDA GPUs only: on a Mac or a CPU it silently runs "
    "the plain module on one device; use DistributedDataParallel, or the module itself"
)
_FUNCTION_MESSAGE = (
    "`data_parallel()` needs CUDA GPUs: it raises on a CPU-only machine (`device type could "
    "not be determined`) and cannot scatter over MPS; call the module itself"
)
_DDP_MESSAGE = (
    "`{keyword}=` only works for CUDA modules: DistributedDataParallel raises `ValueError` for "
    "a CPU module (and MPS has one device); leave it None off CUDA"
)
_MAX_DEPTH = 4


class CudaDataParallel(TracksAssignments):
    """
    ## What it does
    Finds `nn.DataParallel(...)` and `torch.nn.parallel.data_parallel(...)`, and `device_ids=`
    / `output_device=` given to `DistributedDataParallel` (`DDP`) with anything but None,
    also through a kwargs dict (`DDP(model, **kwargs)` after `kwargs["device_ids"] = [rank]`,
    a dict literal or `dict(...)` holding them), reported where the entry is set.

    ## Why is this bad?
    DataParallel replicates a module over CUDA GPUs. Off CUDA, `nn.DataParallel` quietly runs
    the plain module on one device (warning: the parallelism is gone), and `data_parallel()`
    raises. `DistributedDataParallel` raises `ValueError: DistributedDataParallel device_ids and
    output_device arguments only work with single-device/multiple-device GPU modules or CPU
    modules` when a CPU module gets `device_ids`, and a Mac has one MPS device, so
    `device_ids=[local_rank]` names devices that do not exist for ranks above 0.

    ## Example
    ```python
    model = nn.DataParallel(model)
    ddp = DDP(model, device_ids=[local_rank], output_device=local_rank)
    ```

    ## Use instead
    ```python
    ddp = DDP(model.to(device))  # DDP takes the device from the module's parameters
    ```
    """

    code = "CUD702"
    name = "cuda-data-parallel"
    site_severities = (Severity.WARNING,)
    message = _WRAPPER_MESSAGE
    keywords = ("DataParallel", "data_parallel")  # DistributedDataParallel contains the first
    VALID = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\nm = DDP(model)\n",
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "m = DDP(model, device_ids=None)\n",
        "import torch\nm = torch.nn.parallel.DistributedDataParallel(model, device_ids=[])\n",
        "import torch.nn as nn\nif isinstance(model, nn.DataParallel):\n"
        "    model = model.module\n",
        "class DDP:\n    pass\nm = DDP(model, device_ids=[0])\n",
        "from apex.parallel import DistributedDataParallel as DDP\nm = DDP(model)\n",
        "print('wrap the model in nn.DataParallel(model)')\n",
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "kwargs = {'find_unused_parameters': True}\nkwargs['broadcast_buffers'] = False\n"
        "m = DDP(model, **kwargs)\n",
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "kwargs = dict(device_ids=None)\nm = DDP(model, **kwargs)\n",
    )
    INVALID = (
        Invalid("import torch.nn as nn\nmodel = nn.DataParallel(model)\n"),
        Invalid("import torch\nmodel = torch.nn.DataParallel(model, device_ids=[0, 1])\n"),
        Invalid("from torch.nn.parallel import data_parallel\ny = data_parallel(model, x)\n"),
        Invalid(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "m = DDP(model, device_ids=[local_rank])\n"
        ),
        Invalid(
            "import torch.nn as nn\n"
            "m = nn.parallel.DistributedDataParallel(\n"
            "    model, device_ids=[rank], output_device=rank)\n",
            count=2,
        ),
        Invalid(
            "from torch.nn.parallel import DistributedDataParallel\n"
            "m = DistributedDataParallel(model, [args.gpu])\n"
        ),
        Invalid(
            "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
            "ids = [rank] if torch.cuda.is_available() else None\nm = DDP(model, device_ids=ids)\n"
        ),
        Invalid(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "kwargs = {'find_unused_parameters': True}\n"
            "kwargs['device_ids'] = [local_rank]\nm = DDP(model, **kwargs)\n"
        ),
        Invalid(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "ddp_args = {'device_ids': [rank], 'output_device': rank}\n"
            "m = DDP(model, **ddp_args)\n",
            count=2,
        ),
    )

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """Every finding is at a call of the wrappers (or of an alias its import names), so
        `isinstance(model, nn.DataParallel)` or a class body alone names nothing; a function
        naming what a statement naming them binds (`ddp_kwargs`) and no wrapper calls none."""
        wrappers = frozenset({"DataParallel", "DistributedDataParallel", "data_parallel"})
        return Terms(calls=wrappers, follow=tuple(word(name) for name in sorted(wrappers)))

    def visit_Call(self, node: cst.Call) -> None:
        name = self.ctx.call_name(node)
        if name in _DATA_PARALLEL:
            self.report(node, _WRAPPER_MESSAGE, severity=Severity.WARNING)
        elif name in _DATA_PARALLEL_FUNCTIONS:
            self.report(node, _FUNCTION_MESSAGE)
        elif name in _DDP:
            self._check_ddp(node)

    def _check_ddp(self, node: cst.Call) -> None:
        positional = [a for a in node.args if a.keyword is None and not a.star]
        for index, parameter in enumerate(_DDP_DEVICE_PARAMETERS, start=1):
            arg = positional[index] if index < len(positional) else next(
                (a for a in node.args if a.keyword and a.keyword.value == parameter), None)
            if arg is not None:
                self._report_devices(arg, parameter, arg.value, guarded=False)
        for arg in node.args:
            if arg.star == "**":
                entries = self.kwargs_entries(arg.value, _DDP_DEVICE_PARAMETERS)
                for where, parameter, value, guarded in entries:
                    self._report_devices(where, parameter, value, guarded=guarded)

    def _report_devices(self, where: cst.CSTNode, parameter: str, value: cst.BaseExpression,
                        *, guarded: bool) -> None:
        guards_seen = list(self._device_values(value, 0, guarded=guarded))
        if guards_seen:
            self.report(where, _DDP_MESSAGE.format(keyword=parameter),
                        guarded=all(guards_seen) or self.ctx.is_guarded())

    def _device_values(self, expr: cst.BaseExpression, depth: int, *,
                       guarded: bool) -> Iterator[bool]:
        """One item per value `expr` may take that is a device (not None, not `[]`): whether
        that value is only taken under a CUDA check."""
        if depth > _MAX_DEPTH:
            return
        if isinstance(expr, cst.Name):
            if expr.value == "None":
                return
            binding = self.binding(expr)
            if binding is not None:
                yield from self._device_values(binding.value, depth + 1,
                                               guarded=guarded or binding.guarded)
                return
        if isinstance(expr, (cst.List, cst.Tuple)) and not expr.elements:
            return
        if isinstance(expr, cst.IfExp):
            body_guarded = guarded or guards.branch_guard(self.ctx, expr, "body")
            else_guarded = guarded or guards.branch_guard(self.ctx, expr, "orelse")
            yield from self._device_values(expr.body, depth + 1, guarded=body_guarded)
            yield from self._device_values(expr.orelse, depth + 1, guarded=else_guarded)
            return
        yield guarded

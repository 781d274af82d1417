"""CUD113: integer device ordinals."""

from __future__ import annotations

import re

import libcst as cst

from cudalint.engine.context import Settings
from cudalint.engine.prefilter import Terms
from cudalint.finding import Applicability, Severity
from cudalint.rules.base import Invalid, NodeFix, PythonRule
from cudalint.rules.cud1_device import args as call_args

# Names that hold a GPU ordinal: rank, local_rank, gpu, gpu_id, device_id, args.local_rank.
_ORDINAL_NAME = re.compile(r"^(local_?rank|rank|gpu|gpu_?(id|idx|index)|device_?(id|idx|index))$",
                           re.IGNORECASE)


_ORDINAL_SPELLINGS = (
    "rank", "local_rank", "localrank", "gpu", "gpu_id", "gpuid", "gpu_idx", "gpu_index",
    "gpuindex", "device_id", "deviceid", "device_idx", "device_index", "deviceindex",
    "localRank", "gpuId", "gpuIdx", "gpuIndex", "deviceId", "deviceIdx", "deviceIndex",
)


def _ordinal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Name):
        return bool(_ORDINAL_NAME.match(node.value))
    if isinstance(node, cst.Attribute):
        return bool(_ORDINAL_NAME.match(node.attr.value))
    return False


class IntegerDeviceOrdinal(PythonRule):
    """
    ## What it does
    Finds integer device ordinals: `.to(0)`, `.to(local_rank)`, `torch.device(rank)`,
    `device=0`, `device=args.gpu`.

    ## Why is this bad?
    Since torch 2.x an integer device means "the current accelerator": MPS on a Mac, but it
    raises `RuntimeError: Cannot access accelerator device when none is available` on a
    CPU-only machine, and it meant CUDA in older torch.

    ## Example
    ```python
    model.to(local_rank)
    ```

    ## Use instead
    ```python
    from cudalint.device import pick_device

    model.to(pick_device(local_rank))
    ```

    ## Fix safety
    Unsafe: the argument becomes a `torch.device` where it was an `int`, which a function
    of the project (rather than torch) may not accept.
    """

    code = "CUD113"
    name = "integer-device-ordinal"
    message = "Integer device ordinal means CUDA here, MPS on a Mac, and fails on a CPU"
    severity = Severity.INFO
    keywords = ("device", ".to(")

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """An integer literal right after `.to(`, `device=` or `device(`, or a name that holds
        an ordinal, in the spellings people use (`local_rank`, `LOCAL_RANK`, `gpu_id`)."""
        literals = tuple(f"{prefix}{digit}" for prefix in (".to(", "device=", "device(")
                         for digit in "0123456789")
        return Terms(literals, frozenset(
            variant for name in _ORDINAL_SPELLINGS
            for variant in (name, name.upper(), name.capitalize())
        ))
    VALID = (
        "x = x.to(device)\n",
        "x = x.to(torch.float16)\n",
        "pipe = pipeline('text-generation', device=-1)\n",
        "x = x.to(n_steps)\n",
        "torch.cuda.set_device(rank)\n",
    )
    INVALID = (
        Invalid(
            "model = model.to(local_rank)\n",
            "from cudalint.device import pick_device\n\n"
            "model = model.to(pick_device(local_rank))\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nd = torch.device(args.gpu)\n",
            "from cudalint.device import pick_device\n\nd = pick_device(args.gpu)\n",
            unsafe=True,
        ),
        Invalid(
            "x = torch.zeros(3, device=0)\n",
            "from cudalint.device import pick_device\n\n"
            "x = torch.zeros(3, device=pick_device(0))\n",
            unsafe=True,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        name = self.ctx.call_name(node)
        if name == "torch.device" and len(node.args) == 1 and node.args[0].keyword is None:
            if _ordinal(node.args[0].value):
                self._report(node.args[0].value, target=node)
            return
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "device" and _ordinal(arg.value):
                self._report(arg.value)
        first = call_args.positional(node.args, 0)
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "to" and first is not None \
                and _ordinal(first.value):
            self._report(first.value)

    def _report(self, ordinal: cst.BaseExpression,
                target: cst.BaseExpression | None = None) -> None:
        fix = None
        if self.ctx.helper_available("pick_device"):
            replacement = self.ctx.helper_call("pick_device", [cst.Arg(ordinal)])
            message = call_args.replace_message(self.ctx.module, replacement)
            fix = NodeFix(target or ordinal, replacement, message,
                          applicability=Applicability.UNSAFE, helpers=("pick_device",))
        self.report(ordinal, fix=fix)

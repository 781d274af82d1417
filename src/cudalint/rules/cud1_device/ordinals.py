"""CUD113: integer device ordinals."""

from __future__ import annotations

import re

import libcst as cst

from cudalint.engine.contract import Invalid, NodeFix, PythonRule
from cudalint.engine.first_pass.prefilter import GAP, Terms, caseless_word, word
from cudalint.engine.walk.context import Settings
from cudalint.finding import Applicability, Severity
from cudalint.rules import args as call_args

# Names that hold a GPU ordinal: rank, local_rank, gpu, gpu_id, device_id, args.local_rank.
_ORDINALS = ("local_?rank", "rank", "gpu(?:_?(?:id|idx|index))?", "device_?(?:id|idx|index)")
_ORDINAL_NAME = re.compile(rf"^(?:{'|'.join(_ORDINALS)})$", re.IGNORECASE)
_TO, _DEVICE = word("to"), word("device")
_INTEGER = rf"(?:\({GAP})*[0-9]"  # an integer literal, in parentheses or not


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
    follows_assignments = False
    name = "integer-device-ordinal"
    message = "Integer device ordinal means CUDA here, MPS on a Mac, and fails on a CPU"
    severity = Severity.INFO

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """An integer literal as `.to(`'s first argument (after `*args` too), `device=` or
        `device(`; a name spelling an ordinal at the end of an argument (`args.gpu)`) where the
        same text calls `to(` or `device(`, or says `device=`; and `device as`, an alias of
        `torch.device` (its uses name the alias, bound by a statement this term makes read)."""
        return Terms(
            patterns=(rf"{_TO}{GAP}[(=]{GAP}{_INTEGER}", rf"{_DEVICE}{GAP}[(=]{GAP}{_INTEGER}",
                      rf"{_DEVICE}{GAP}as\b"),
            together=(
                (rf"{caseless_word(_ORDINALS)}{GAP}[,)]", rf"(?:{_TO}{GAP}\(|{_DEVICE}{GAP}[(=])"),
                (rf"{_TO}{GAP}\({GAP}\*(?!\*)", rf",{GAP}{_INTEGER}"),
            ),
        )

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

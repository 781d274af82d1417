"""CUD111: `torch.load` without `map_location`."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from cudalint.engine.contract import Invalid, NodeFix, PythonRule
from cudalint.engine.first_pass.prefilter import GAP, Terms, word
from cudalint.engine.walk.context import Settings
from cudalint.finding import Applicability, Severity
from cudalint.rules import args as call_args

_TORCH = word("torch")


class LoadWithoutMapLocation(PythonRule):
    """
    ## What it does
    Finds `torch.load(...)` calls without a `map_location` (or with `map_location=None`).

    ## Why is this bad?
    A checkpoint saved on a CUDA machine holds CUDA tensors; loading it where CUDA is
    missing fails with `RuntimeError: Attempting to deserialize object on a CUDA device but
    torch.cuda.is_available() is False`.

    ## Example
    ```python
    state = torch.load("checkpoint.pt")
    ```

    ## Use instead
    ```python
    from cudalint.device import pick_device

    state = torch.load("checkpoint.pt", map_location=pick_device())
    ```

    ## Fix safety
    Unsafe: on a CUDA machine, a checkpoint saved from `cuda:1` or from the CPU now loads
    onto the current device instead of where it was saved.
    """

    code = "CUD111"
    follows_assignments = False
    name = "load-without-map-location"
    message = "`torch.load` without `map_location` fails on a checkpoint saved on CUDA"
    severity = Severity.WARNING

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """`torch.load(`, a bare `load(` (`from torch import load`), and the aliases `torch as`
        and `load as` (the functions naming the alias are read); not `json.load(f)`,
        `self.load(path)` or `def load(self):`."""
        call = rf"{GAP}\({GAP}"
        return Terms(patterns=(
            rf"{_TORCH}{GAP}\.{GAP}load{call}", rf"load(?<![A-Za-z0-9_.]load)(?<!def load){call}",
            rf"{_TORCH}{GAP}as\b", rf"{word('load')}{GAP}as\b",
        ))

    VALID = (
        "state = torch.load(path, map_location='cpu')\n",
        "state = torch.load(path, 'cpu')\n",
        "state = torch.load(path, **load_kwargs)\n",
        "import json\ncfg = json.load(f)\n",
        "state = yaml.load(f)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nstate = torch.load('ckpt.pt')\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "state = torch.load('ckpt.pt', map_location=pick_device())\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nstate = torch.load(path, weights_only=True)\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "state = torch.load(path, weights_only=True, map_location=pick_device())\n",
            unsafe=True,
        ),
        Invalid(
            "from torch import load\nstate = load(path, map_location=None)\n",
            "from torch import load\nfrom cudalint.device import pick_device\n\n"
            "state = load(path, map_location=pick_device())\n",
            unsafe=True,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.call_name(node) != "torch.load" or call_args.has_star(node.args):
            return
        if call_args.positional(node.args, 1) is not None:
            return
        given = call_args.keyword(node.args, "map_location")
        if given is not None and not (isinstance(given.value, cst.Name)
                                      and given.value.value == "None"):
            return
        self.report(node, fix=self._fix(node, given))

    def _fix(self, node: cst.Call, given: cst.Arg | None) -> NodeFix | None:
        if not self.ctx.helper_available("pick_device"):
            return None
        device = self.ctx.helper_call("pick_device")
        if given is not None:
            replacement = node.with_deep_changes(given, value=device)
        else:
            argument = cst.Arg(device, keyword=cst.Name("map_location"),
                               equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                     cst.SimpleWhitespace("")))
            replacement = node.with_changes(args=call_args.respaced(
                [*_with_comma(node.args), argument]))
        return NodeFix(node, replacement, "Add `map_location=pick_device()`",
                       applicability=Applicability.UNSAFE, helpers=("pick_device",))


def _with_comma(arguments: Sequence[cst.Arg]) -> list[cst.Arg]:
    """The arguments, the last one given a `, ` so that one more can follow."""
    if not arguments:
        return []
    last = arguments[-1]
    if isinstance(last.comma, cst.Comma):
        return list(arguments)
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [*arguments[:-1], last.with_changes(comma=comma)]

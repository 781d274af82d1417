"""CUD106: CUDA-only mixed precision (`torch.cuda.amp`, `torch.autocast("cuda")`)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import Invalid, NodeFix
from cudalint.engine.walk.context import dotted_name
from cudalint.finding import Applicability, Severity
from cudalint.rules import args as call_args
from cudalint.rules.cud1_device import cuda_api_table
from cudalint.rules.cud1_device.cuda_api_fixes import keyword_arg, pick_device_type
from cudalint.rules.cud1_device.cuda_api_table import CudaApi, DeviceTypeArgument
from cudalint.rules.cud1_device.references import ApiUse, ApiUseRule

if TYPE_CHECKING:
    from cudalint.engine.walk.context import PythonContext

_LITERAL_MESSAGE = (
    '`"cuda"` as the mixed-precision device type turns autocast and gradient scaling off on a '
    "Mac; use `pick_device().type`"
)


class CudaOnlyMixedPrecision(ApiUseRule):
    """
    ## What it does
    Finds CUDA-only mixed precision: `torch.cuda.amp.autocast(...)` (called, in `with`, as a
    decorator), `torch.cuda.amp.GradScaler(...)`, `torch.cuda.amp.custom_fwd` / `custom_bwd`
    (bare or called with `cast_inputs=`), the same names imported with
    `from torch.cuda.amp import ...` (each use of an imported name is reported, and the
    import itself only for a name that no code uses), such an import itself where it is the
    fallback of `if hasattr(torch.amp, "custom_fwd"): ... else: ...` (or of a `try`, whose
    uses mean either API and are not reported), and the literal
    `"cuda"` as the device type of the portable APIs: `torch.autocast("cuda")`,
    `torch.autocast(device_type="cuda")`, `torch.amp.autocast("cuda")`,
    `torch.amp.GradScaler("cuda")`, `torch.amp.custom_fwd(device_type="cuda")`.
    (`GradScaler(device="cuda")` is a `device=` keyword: CUD101 reports it.)

    ## Why is this bad?
    Off CUDA these warn and disable themselves: a Mac trains in float32 without gradient
    scaling, slower and with a different memory profile than intended, while MPS supports
    float16 autocast and gradient scaling.

    ## Example
    ```python
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast(dtype=torch.float16):
        loss = model(x)
    ```

    ## Use instead
    ```python
    from cudalint.device import pick_device

    scaler = torch.amp.GradScaler(pick_device().type)
    with torch.autocast(pick_device().type, dtype=torch.float16):
        loss = model(x)
    ```

    ## Fix safety
    Safe: `torch.cuda.amp.autocast(args...)` is a deprecated alias of
    `torch.autocast("cuda", args...)` (its positional arguments become keywords), and the same
    holds for `GradScaler` (`torch.amp.GradScaler`, torch >= 2.3) and `custom_fwd`/`custom_bwd`
    (`torch.amp.custom_fwd(device_type=...)`, torch >= 2.4); `pick_device().type` is `"cuda"`
    wherever CUDA is available. Against an older target torch (`target-torch`) there is no fix.
    Each fix is safe only from the first torch whose API takes the device type `"mps"`, since
    older releases raise `unsupported autocast device_type 'mps'` (at import, for a decorator):
    autocast and `custom_fwd`/`custom_bwd` from torch 2.5, `GradScaler` from 2.8 (the first
    whose MPS backend unscales gradients); against an older target torch it is unsafe, and so
    it is where the project states no torch floor (no `torch` requirement with a lower bound
    and no `target-torch`: cudalint cannot know the Mac's torch). There the assumed torch is
    2.6, or older where the project shows it: a torch its README names (`PyTorch 1.7`: no
    fix needing 1.10), code that runs only before torch 2.0 (`torch._six`: assumed 1.13). The
    same holds for `torch.autocast("cuda")` -> `torch.autocast(pick_device().type)`.

    | fix (to the portable API, `pick_device().type`) | needs torch | safe from torch |
    | --- | --- | --- |
    | `torch.cuda.amp.autocast` | 1.10 | 2.5 |
    | `torch.cuda.amp.GradScaler` | 2.3 | 2.8 |
    | `torch.cuda.amp.custom_fwd`, `custom_bwd` | 2.4 | 2.5 |
    | `"cuda"` as the device type of `torch.autocast`, `torch.amp.*` | - | 2.5 (2.8) |

    A bare `@torch.cuda.amp.autocast` decorator (a bug: it needs parentheses) and uses that are
    not calls are reported without a fix.
    """

    code = "CUD106"
    name = "cuda-only-mixed-precision"
    message = "CUDA-only mixed precision"
    severity = Severity.WARNING
    words = frozenset({"cuda"})
    VALID = (
        "with torch.autocast(device_type=device.type):\n    pass\n",
        "with torch.autocast('cpu', dtype=torch.bfloat16):\n    pass\n",
        "scaler = torch.amp.GradScaler(pick_device().type)\n",
        'print("use torch.cuda.amp.autocast()")\n',
        "import torch\nif hasattr(torch.amp, 'custom_fwd'):\n"
        "    from torch.amp import custom_fwd\nelse:\n    from torch.cpu.amp import custom_fwd\n",
        "# with torch.cuda.amp.autocast():\nx = 1\n",
        'if device_type == "cuda":\n    pass\n',
        'scaler = torch.amp.GradScaler(device="cuda")\n',
    )
    INVALID = (
        Invalid(
            "import torch\nwith torch.cuda.amp.autocast():\n    pass\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "with torch.autocast(pick_device().type):\n    pass\n",
        ),
        Invalid(
            "import torch\nwith torch.cuda.amp.autocast(True, torch.bfloat16):\n    pass\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "with torch.autocast(pick_device().type, enabled=True, dtype=torch.bfloat16):\n"
            "    pass\n",
        ),
        Invalid(
            "from torch.cuda.amp import autocast, GradScaler\n"
            "scaler = GradScaler(enabled=use_amp)\n"
            "with autocast(enabled=use_amp, cache_enabled=False):\n    pass\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "scaler = torch.amp.GradScaler(pick_device().type, enabled=use_amp)\n"
            "with torch.autocast(pick_device().type, enabled=use_amp, cache_enabled=False):\n"
            "    pass\n",
            count=2,
        ),
        Invalid(
            "import torch\n\n@torch.cuda.amp.autocast()\ndef forward(x):\n    return x\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "@torch.autocast(pick_device().type)\ndef forward(x):\n    return x\n",
        ),
        Invalid(
            "import torch\n\nclass F(torch.autograd.Function):\n"
            "    @staticmethod\n    @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\n"
            "    def forward(ctx, x):\n        return x\n\n"
            "    @staticmethod\n    @torch.cuda.amp.custom_bwd\n"
            "    def backward(ctx, g):\n        return g\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "class F(torch.autograd.Function):\n"
            "    @staticmethod\n"
            "    @torch.amp.custom_fwd(device_type=pick_device().type, cast_inputs=torch.float32)\n"
            "    def forward(ctx, x):\n        return x\n\n"
            "    @staticmethod\n    @torch.amp.custom_bwd(device_type=pick_device().type)\n"
            "    def backward(ctx, g):\n        return g\n",
            count=2,
        ),
        Invalid(
            "import torch\nwith torch.autocast('cuda', dtype=torch.float16):\n    pass\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "with torch.autocast(pick_device().type, dtype=torch.float16):\n    pass\n",
        ),
        Invalid(
            "import torch\nwith torch.amp.autocast(device_type=\"cuda\", enabled=amp):\n"
            "    pass\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "with torch.amp.autocast(device_type=pick_device().type, enabled=amp):\n    pass\n",
        ),
        Invalid(
            "import torch\nscaler = torch.amp.GradScaler('cuda', init_scale=1024)\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "scaler = torch.amp.GradScaler(pick_device().type, init_scale=1024)\n",
        ),
        Invalid(
            "import torch\nif torch.cuda.is_available():\n"
            "    scaler = torch.cuda.amp.GradScaler(2.0**16)\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "if torch.cuda.is_available():\n"
            "    scaler = torch.amp.GradScaler(pick_device().type, 2.0**16)\n",
        ),
        Invalid("import torch\nctx = torch.cuda.amp.autocast if amp else nullcontext\n"),
        Invalid("from torch.cuda.amp import autocast\n"),
        Invalid("from torch.cuda.amp import GradScaler, autocast\n"
                "# autocast is not used here\n"
                "scaler = GradScaler()\n",
                "from torch.cuda.amp import autocast\nimport torch\n"
                "from cudalint.device import pick_device\n\n"
                "# autocast is not used here\n"
                "scaler = torch.amp.GradScaler(pick_device().type)\n", count=2),
        Invalid("import torch\n\n@torch.cuda.amp.autocast\ndef f(x):\n    return x\n"),
        Invalid("import torch\nwith torch.cuda.amp.autocast(*flags):\n    pass\n"),
        Invalid(
            "import torch\nfrom functools import partial\n\n"
            "if hasattr(torch.amp, 'custom_fwd'):\n"
            "    custom_fwd = partial(torch.amp.custom_fwd, device_type='cuda')\n"
            "else:\n    from torch.cuda.amp import custom_fwd\n\n\n"
            "class F(torch.autograd.Function):\n    @staticmethod\n    @custom_fwd\n"
            "    def forward(ctx, x):\n        return x\n",
        ),
    )

    def __init__(self, ctx: PythonContext) -> None:
        super().__init__(ctx)
        self._fallbacks: set[str] = set()  # names imported from torch.cuda.amp as a fallback
        # names imported from torch.cuda.amp that no use has been met of yet: the import,
        # its message, whether it is guarded
        self._unused: dict[str, tuple[cst.ImportAlias, str, bool]] = {}

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        """`from torch.cuda.amp import custom_fwd` where `torch.amp` lacks it: the import is
        the finding, since the name means either API where it is used. Elsewhere each use
        of an imported name is the finding, and the import itself only where no use is."""
        if isinstance(node.names, cst.ImportStar) or node.module is None \
                or dotted_name(node.module) != "torch.cuda.amp":
            return
        fallback = self._in_fallback()
        for alias in node.names:
            imported = dotted_name(alias.name)
            api = cuda_api_table.lookup(f"torch.cuda.amp.{imported}")
            if api is None or api.code != self.code:
                continue
            local = alias.asname.name if alias.asname is not None else alias.name
            name = local.value if isinstance(local, cst.Name) else None
            message = api.message_for(f"torch.cuda.amp.{imported}")
            if fallback:
                if name is not None:
                    self._fallbacks.add(name)
                self.report(alias, message)
            elif name is not None and name not in self.ctx.hidden.words:
                # reported when the walk ends, if no use of it was met (`check_use`)
                self._unused[name] = (alias, message, self.ctx.is_guarded())

    def leave_Module(self, original_node: cst.Module) -> None:
        for alias, message, guarded in self._unused.values():
            self.report(alias, f"{message} (imported, and used nowhere)", guarded=guarded)

    def _in_fallback(self) -> bool:
        """In the `else:` of `if hasattr(torch.amp, ...)`, or the handler of a `try` that
        imports from `torch.amp`."""
        for parent, child in itertools.pairwise(self.ctx.stack):
            if isinstance(parent, cst.If) and child is parent.orelse \
                    and self._tests_torch_amp(parent.test):
                return True
            if isinstance(parent, cst.Try) and child in parent.handlers:
                return True
        return False

    def _tests_torch_amp(self, test: cst.BaseExpression) -> bool:
        """`hasattr(torch.amp, "custom_fwd")`, `hasattr(torch, "amp")`."""
        if not isinstance(test, cst.Call) or self.ctx.call_name(test) != "hasattr" \
                or not test.args:
            return False
        return (self.ctx.qualname(test.args[0].value) or "") in ("torch", "torch.amp")

    def visit_Call(self, node: cst.Call) -> None:
        name = self.ctx.call_name(node)
        where = cuda_api_table.device_type_argument(name) if name else None
        if where is None:
            return
        arg = _device_type_arg(node.args, where)
        if arg is None or not _is_cuda(arg.value):
            return
        fix = None
        if self.ctx.helper_available("pick_device"):
            fix = NodeFix(arg.value, pick_device_type(self.ctx),
                          "Replace with `pick_device().type`", self._safe_from(where),
                          helpers=("pick_device",))
        self.report(arg if arg.keyword is not None else arg.value, _LITERAL_MESSAGE, fix=fix)

    # -- torch.cuda.amp.* ----------------------------------------------------------------
    def check_use(self, use: ApiUse) -> None:
        node = use.node
        if use.api.code != self.code or use.api.portable is None:
            return
        if isinstance(node, cst.Name):
            self._unused.pop(node.value, None)
        if isinstance(node, cst.Name) and node.value in self._fallbacks:
            return  # reported at the import
        message = use.api.message_for(use.name)
        if use.call is not None:
            self.report(use.call, message, fix=self._call_fix(use.call, use.api))
            return
        self.report(node, message, fix=self._decorator_fix(use))

    def _decorator_fix(self, use: ApiUse) -> NodeFix | None:
        """A bare `@torch.cuda.amp.custom_fwd`: the portable decorator takes a device type."""
        if not isinstance(self.ctx.parent(), cst.Decorator) or use.api.device != "device_type":
            return None
        return self._call_fix(cst.Call(func=use.node), use.api, target=use.node)

    def _call_fix(self, call: cst.Call, api: CudaApi,
                  target: cst.CSTNode | None = None) -> NodeFix | None:
        applicability = self._applicability(api)
        if applicability is None or api.portable is None:
            return None
        if not self.ctx.helper_available("pick_device"):
            return None
        args = _portable_args(call.args, api, pick_device_type(self.ctx))
        if args is None:
            return None
        func, imports = self.ctx.torch_attr(api.portable)
        replacement = call.with_changes(func=func, args=args)
        return NodeFix(target or call, replacement, f"Replace with `torch.{api.portable}`",
                       applicability, helpers=("pick_device",), imports=imports)

    def _applicability(self, api: CudaApi) -> Applicability | None:
        if self.ctx.settings.target_torch < api.min_torch:
            return None
        return self._safe_from(api)

    def _safe_from(self, needs: CudaApi | DeviceTypeArgument) -> Applicability:
        """Safe where the project states a torch at least `needs.safe_from_torch` (the first
        that takes the device type "mps"); unsafe where it states an older one, and wherever
        it states none (the fix needs a torch the project may not have)."""
        settings = self.ctx.settings
        if needs.safe_from_torch == (0, 0) or (settings.torch_stated
                                               and settings.target_torch >= needs.safe_from_torch):
            return Applicability.SAFE
        return Applicability.UNSAFE


def _portable_args(args: Sequence[cst.Arg], api: CudaApi,
                   device: cst.BaseExpression) -> list[cst.Arg] | None:
    """The arguments of the portable call: the device type added where it takes it."""
    if api.device == "device_type":
        positional = [a for a in args if a.keyword is None and a.star != "**"]
        rest = [a for a in args if a not in positional]
        return [*positional, keyword_arg("device_type", device), *call_args.respaced(rest)]
    if not api.keywords:
        return [cst.Arg(device), *args]
    # torch.cuda.amp.autocast(enabled, dtype, cache_enabled): after the device type, the
    # portable autocast's positional order differs, so positional arguments become keywords.
    if any(a.star == "*" for a in args):
        return None
    positional = [a for a in args if a.keyword is None and not a.star]
    if len(positional) > len(api.keywords):
        return None
    named = [keyword_arg(k, a.value).with_changes(comma=a.comma)
             for k, a in zip(api.keywords, positional, strict=False)]
    rest = [a for a in args if a.keyword is not None or a.star]
    return [cst.Arg(device), *call_args.respaced([*named, *rest])]


def _device_type_arg(args: Sequence[cst.Arg],
                     where: DeviceTypeArgument) -> cst.Arg | None:
    if where.keyword is not None and (arg := call_args.keyword(args, where.keyword)):
        return arg
    if where.position is None or call_args.has_star(args):
        return None
    return call_args.positional(args, where.position)


def _is_cuda(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.SimpleString) and expr.evaluated_value == "cuda"

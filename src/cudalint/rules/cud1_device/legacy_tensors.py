"""CUD104: legacy CUDA tensor types (`torch.cuda.FloatTensor`, ...)."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from cudalint.engine.contract import Invalid, NodeFix
from cudalint.finding import Severity
from cudalint.rules import args as call_args
from cudalint.rules.cud1_device import cuda_api_table, own_methods
from cudalint.rules.cud1_device.cuda_api_fixes import keyword_arg, pick_device, unique
from cudalint.rules.cud1_device.cuda_api_table import CudaApi
from cudalint.rules.cud1_device.references import ApiUse, ApiUseRule

_TYPE_KEYWORDS = ("dtype", "dst_type")  # Tensor.type(dtype=...), Module.type(dst_type=...)
_NUMBERS = (cst.Integer, cst.Float)
_SET_DEFAULT_TYPE = "torch.set_default_tensor_type"


class LegacyCudaTensorType(ApiUseRule):
    """
    ## What it does
    Finds the legacy CUDA tensor types `torch.cuda.FloatTensor`, `DoubleTensor`, `HalfTensor`,
    `BFloat16Tensor`, `ByteTensor`, `CharTensor`, `ShortTensor`, `IntTensor`, `LongTensor`,
    `BoolTensor` (and the legacy `torch.cuda.*Storage` types): constructed, passed to
    `.type(...)` or `torch.set_default_tensor_type(...)` (also as a string,
    `"torch.cuda.FloatTensor"`), or used as values
    (`Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`, `isinstance`).

    ## Why is this bad?
    Without CUDA they raise `TypeError: type torch.cuda.FloatTensor not available. Torch not
    compiled with CUDA enabled`, and they cannot describe an MPS tensor at all.

    ## Example
    ```python
    mask = torch.cuda.BoolTensor([True, False])
    buffer = torch.cuda.FloatTensor(64, 64)
    x = x.type(torch.cuda.LongTensor)
    ```

    ## Use instead
    ```python
    from cudalint.device import pick_device

    mask = torch.tensor([True, False], dtype=torch.bool, device=pick_device())
    buffer = torch.empty(64, 64, dtype=torch.float32, device=pick_device())
    x = x.to(pick_device(), torch.int64)
    ```

    ## Fix safety
    Safe where the rewrite is exact: a call with one list or tuple literal of numbers becomes
    `torch.tensor(data, dtype=..., device=pick_device())`, a call with integer literal sizes
    (or none) becomes `torch.empty(..., dtype=..., device=pick_device())`, and
    `.type(torch.cuda.XTensor)` becomes `.to(pick_device(), dtype)`; on CUDA `pick_device()`
    is the current CUDA device, where the legacy types allocate. (On an `nn.Module`,
    `.type(...)` also cast integer buffers, which `.to(...)` leaves alone.) Other arguments
    (a variable that may be a size or data, an array) and other uses are not fixed. The
    `DoubleTensor` fix is unsafe: MPS has no float64.
    """

    code = "CUD104"
    name = "legacy-cuda-tensor-type"
    message = "Legacy CUDA tensor type"
    severity = Severity.ERROR
    words = frozenset({"cuda"})
    VALID = (
        "x = torch.FloatTensor([1.0])\n",
        "x = torch.tensor([1.0], dtype=torch.float32, device=device)\n",
        'print("torch.cuda.FloatTensor is deprecated")\n',
        "x = y.type(torch.float16)\n",
        "t = x.type()\n",
        "# x = torch.cuda.FloatTensor(3)\nx = 1\n",
        'name = "torch.cuda.FloatTensor"\n',
    )
    INVALID = (
        Invalid(
            "import torch\nx = torch.cuda.FloatTensor([1.0, 2.0])\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "x = torch.tensor([1.0, 2.0], dtype=torch.float32, device=pick_device())\n",
        ),
        Invalid(
            "import torch as th\n\ndef buf():\n    return th.cuda.LongTensor(3, 4)\n",
            "import torch as th\nfrom cudalint.device import pick_device\n\n"
            "def buf():\n    return th.empty(3, 4, dtype=th.int64, device=pick_device())\n",
        ),
        Invalid(
            "import torch\ny = x.type(torch.cuda.HalfTensor)\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "y = x.to(pick_device(), torch.float16)\n",
        ),
        Invalid(
            "y = x.type('torch.cuda.ByteTensor', non_blocking=True)\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "y = x.to(pick_device(), torch.uint8, non_blocking=True)\n",
        ),
        Invalid(
            "from torch.cuda import BoolTensor\nm = BoolTensor((True, False))\n",
            "import torch\nfrom cudalint.device import "
            "pick_device\n\nm = torch.tensor((True, False), dtype=torch.bool, "
            "device=pick_device())\n",
        ),
        Invalid(
            "import torch\nx = torch.cuda.DoubleTensor(2)\n",
            "import torch\nfrom cudalint.device import pick_device\n\n"
            "x = torch.empty(2, dtype=torch.float64, device=pick_device())\n",
            unsafe=True,
        ),
        Invalid("import torch\nx = torch.cuda.FloatTensor(n)\n"),
        Invalid("import torch\nx = torch.cuda.FloatTensor(array)\n"),
        Invalid("import torch\nok = isinstance(x, torch.cuda.FloatTensor)\n"),
        Invalid("import torch\nTensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n"),
        Invalid("import torch\ns = torch.cuda.FloatStorage(4)\n"),
        Invalid("import torch\ntorch.set_default_tensor_type('torch.cuda.FloatTensor')\n"),
        Invalid("import torch\ntorch.set_default_tensor_type(torch.cuda.HalfTensor)\n"),
    )

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        """`x.type("torch.cuda.FloatTensor")`, `torch.set_default_tensor_type("...")`."""
        if "torch.cuda." not in node.value and "\\" not in node.value:
            return  # cheaper than evaluating every string of the module
        value = node.evaluated_value
        if not isinstance(value, str) or not value.startswith("torch.cuda."):
            return
        api = cuda_api_table.lookup(value)
        if api is None or api.code != self.code:
            return
        call = self._type_call(node)
        if call is not None:
            self.report(node, api.message_for(value), severity=api.severity,
                        fix=self._type_fix(call, node, api))
        elif self._sets_default_type():
            self.report(node, api.message_for(value), severity=api.severity)

    def _sets_default_type(self) -> bool:
        arg, call = self.ctx.parent(), self.ctx.parent(2)
        return isinstance(arg, cst.Arg) and isinstance(call, cst.Call) \
            and self.ctx.call_name(call) == _SET_DEFAULT_TYPE

    def check_use(self, use: ApiUse) -> None:
        node = use.node
        if use.api.code != self.code:
            return
        message = use.api.message_for(use.name)
        call = self._type_call(node)
        if call is not None:
            fix = self._type_fix(call, node, use.api)
            self.report(node, message, severity=use.api.severity, fix=fix)
            return
        fix = self._constructor_fix(use.call, use.api) if use.call is not None else None
        self.report(use.call or node, message, severity=use.api.severity, fix=fix)

    # -- x.type(torch.cuda.FloatTensor) --------------------------------------------------
    def _type_call(self, node: cst.CSTNode) -> cst.Call | None:
        """The `x.type(<node>)` call `node` is the type argument of."""
        arg, call = self.ctx.parent(), self.ctx.parent(2)
        if not isinstance(arg, cst.Arg) or not isinstance(call, cst.Call):
            return None
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "type":
            return None
        if arg.keyword is None:
            return call if call_args.positional(call.args, 0) is arg else None
        return call if arg.keyword.value in _TYPE_KEYWORDS else None

    def _type_fix(self, call: cst.Call, node: cst.CSTNode, api: CudaApi) -> NodeFix | None:
        func = call.func
        assert isinstance(func, cst.Attribute)
        receiver = self.ctx.qualname(func.value)
        if api.dtype is None or (receiver or "").startswith("torch"):
            return None
        if call_args.has_star(call.args) or not self.ctx.helper_available("pick_device") \
                or own_methods.calls_itself(self.ctx, func.value, "to"):
            return None  # `self.type(...)` inside `def to(self)`: `self.to(...)` would recurse
        dtype, imports = self.ctx.torch_attr(api.dtype)
        rest = [a for a in call.args if a.value is not node]
        replacement = call.with_changes(
            func=func.with_changes(attr=cst.Name("to")),
            args=[cst.Arg(pick_device(self.ctx)), cst.Arg(dtype), *call_args.respaced(rest)],
        )
        return NodeFix(call, replacement, call_args.replace_message(self.ctx.module, replacement),
                       api.applicability, helpers=("pick_device",), imports=imports)

    # -- torch.cuda.FloatTensor(...) -----------------------------------------------------
    def _constructor_fix(self, call: cst.Call, api: CudaApi) -> NodeFix | None:
        if api.dtype is None or not self.ctx.helper_available("pick_device"):
            return None
        shape = _factory(call.args)
        if shape is None:
            return None
        factory, data = shape
        func, func_imports = self.ctx.torch_attr(factory)
        dtype, dtype_imports = self.ctx.torch_attr(api.dtype)
        replacement = cst.Call(func=func, args=[
            *data, keyword_arg("dtype", dtype), keyword_arg("device", pick_device(self.ctx)),
        ])
        return NodeFix(call, replacement, f"Replace with `torch.{factory}(...)`",
                       api.applicability, helpers=("pick_device",),
                       imports=unique(func_imports, dtype_imports))


def _factory(args: Sequence[cst.Arg]) -> tuple[str, list[cst.Arg]] | None:
    """`("tensor", [data])` for one literal list or tuple of numbers, `("empty", sizes)` for
    integer literal sizes (or none); None when the arguments could be either."""
    if any(arg.keyword is not None or arg.star for arg in args):
        return None
    if not args:
        return "empty", [cst.Arg(cst.Integer("0"))]
    if len(args) == 1 and isinstance(args[0].value, (cst.List, cst.Tuple)):
        data = args[0].value
        return ("tensor", [cst.Arg(data)]) if _numeric(data) else None
    if all(isinstance(arg.value, cst.Integer) for arg in args):
        return "empty", [arg.with_changes(comma=cst.MaybeSentinel.DEFAULT) for arg in args]
    return None


def _numeric(expr: cst.BaseExpression) -> bool:
    """A literal made of numbers, booleans and nested lists or tuples of them."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and _numeric(e.value) for e in expr.elements)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return isinstance(expr.expression, _NUMBERS)
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False")
    return isinstance(expr, _NUMBERS)

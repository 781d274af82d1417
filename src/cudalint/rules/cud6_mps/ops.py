"""CUD602: calls whose ATen ops have no MPS kernel (from the generated tables in mps_ops)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from functools import cached_property

import libcst as cst

from cudalint.engine.contract import Invalid, PythonRule
from cudalint.engine.first_pass.prefilter import Terms
from cudalint.engine.walk import scopes
from cudalint.engine.walk.context import Settings
from cudalint.finding import Severity
from cudalint.mps_ops import UNKNOWN_VALUE, Coverage, OpStatus, load_coverage
from cudalint.rules import args as call_args
from cudalint.rules import tables

_FALLBACK_VARIABLE = "PYTORCH_ENABLE_MPS_FALLBACK"
_LITERALS: Mapping[str, object] = {"True": True, "False": False, "None": None}
# Namespaces whose lower-case functions return tensors (`torch.randn`, `F.softmax`), unlike
# `torch.multiprocessing.Queue()` or `torch.load(...)`.
_TENSOR_NAMESPACES = frozenset(
    {"torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special"}
)
_NOT_TENSORS = frozenset({"device", "load", "compile", "get_default_dtype", "get_default_device"})
# A tensor tested for these is one that cannot be on MPS: quantized tensors live on the CPU
# or CUDA only (`x.dequantize()` under `if x.is_quantized:`), `is_cpu` ones on the CPU.
_OFF_MPS_TESTS = frozenset({"is_quantized", "is_cpu"})


class OpWithoutMpsKernel(PythonRule):
    """
    ## What it does
    Finds calls whose ATen ops have no MPS kernel in the target torch version
    (`target-torch`, else the installed one): `torch.linalg.eig`/`eigvals`/`eigh`,
    `torch.mode`, `nn.CTCLoss`, `F.pdist`, `torch.take`, ... The table is generated from
    torch's own `native_functions.yaml` and a trace of each call's decomposition, so
    `torch.linalg.eigvals` (composite, made of `linalg_eig`) is found while `torch.linalg.solve`
    and `torch.matmul` are not. Tensor methods (`x.mode()`, `x.svd()`) are matched by name in
    modules that import torch; names other libraries share (`mode`, `take`, `put`, ...:
    pandas' `Series.mode()`, `queue.put()`) only when the receiver is evidently a tensor
    (`dim=` given, or made by a torch function). Only an op whose tensor can reach MPS is
    reported: not a call given an explicit CPU tensor (`A.cpu()`), nor one on a tensor that a
    test around it says is quantized or on the CPU (`x.dequantize()` under
    `if x.is_quantized:`, `x.int_repr()` after `x.is_quantized and`, under `if x.is_cpu:`):
    quantized tensors exist only on the CPU and CUDA. Only the forward pass's ops count.

    ## Why is this bad?
    On a Mac such an op raises `NotImplementedError: The operator '...' is not currently
    implemented for the MPS device` unless `PYTORCH_ENABLE_MPS_FALLBACK=1` is set before torch
    is imported; with it, the op runs on the CPU, with copies to and from the GPU (error, or
    warning when the module sets the variable before importing torch). A few ops
    (`linalg_svd`, `col2im`, ...) always run on the CPU there (warning).

    ## Example
    ```python
    eigenvalues = torch.linalg.eigvals(matrix.to(device))
    ```

    ## Use instead
    ```python
    eigenvalues = torch.linalg.eigvals(matrix.cpu()).to(device)
    ```
    or set `PYTORCH_ENABLE_MPS_FALLBACK=1` in the environment before starting Python.
    """

    code = "CUD602"
    follows_assignments = False
    name = "op-without-mps-kernel"
    site_severities = (Severity.WARNING,)
    message = "this call's ATen op has no MPS kernel"
    keywords = ("torch",)
    VALID = (
        "import torch\nx = torch.linalg.solve(A, b)\n",
        "import torch\ny = torch.matmul(a, b)\n",
        "import torch.nn as nn\nlayer = nn.Linear(3, 4)\n",
        "import torch\nw = torch.linalg.eig(A.cpu())\n",
        "import torch\nfrom scipy import stats\nm = stats.mode(values)\n",
        "import torch\nimport numpy as np\nv = np.linalg.eig(a)\nw = np.take(a, [0])\n",
        "import torch\nm = df['label'].mode()\nq.put(item)\n",
        "import torch.multiprocessing as mp\nq = mp.get_context('spawn').Queue()\nq.put(1)\n",
        "import torch\nprint('torch.linalg.eig has no MPS kernel')\n",
        "m = x.svd()\n",
        "import torch\n\ndef to_float(x):\n    if x.is_quantized:\n        x = x.dequantize()\n"
        "    return x\n",
        "import torch\n\ndef scale(t):\n    return t.q_scale() if t.is_quantized else 1.0\n",
        "import torch\n\ndef ref(x):\n    if x.is_cpu:\n        return torch.linalg.eig(x)\n",
    )
    INVALID = (
        Invalid("import torch\nw = torch.linalg.eig(A)\n"),
        Invalid("import torch as th\nw = th.linalg.eigvals(A.to(device))\n"),
        Invalid("import torch.nn.functional as F\nd = F.pdist(x)\n"),
        Invalid("from torch import nn\nloss = nn.CTCLoss(blank=0)\n"),
        Invalid("import torch\nvalues, idx = torch.mode(x, dim=1)\n"),
        Invalid("import torch\nvalues, idx = x.mode(dim=-1)\n"),
        Invalid("import torch\nt = torch.randn(4, 4)\nm = t.mode()\n"),
        Invalid("import torch\nu, s, v = x.svd()\n"),
        Invalid("import torch\n\ndef to_float(x, y):\n    if y.is_quantized:\n"
                "        return x.dequantize()\n"),
        Invalid("import torch\nopt = torch.optim.Adagrad(params, fused=True)\n"),
        Invalid(
            "import os\nos.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'\nimport torch\n"
            "w = torch.linalg.eig(A)\n"
        ),
    )

    settings_terms = True

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """A reported call names one of the table's calls that lack an MPS kernel: where it
        is called (`torch.mode(x)`, `x.mode(dim=1)`), not `self.mode = mode` or `mode="fan_in"`.
        A statement setting the CPU fallback changes the findings' message: it is read too."""
        major, minor = settings.target_torch
        return Terms(keywords=(_FALLBACK_VARIABLE,),
                     calls=load_coverage(f"{major}.{minor}").missing_call_names)

    def visit_Call(self, node: cst.Call) -> None:
        name = self.ctx.call_name(node)
        if name is not None and name.startswith("torch."):
            first = call_args.positional(node.args, 0)
            if not self._on_cpu(node) and not (first and self._off_mps(first.value)):
                self._check(node, node, name, f"`{name}`")
            return
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        found = self._coverage.method_calls(method)  # most methods are in no entry
        if found and not self._on_cpu(node) and self._tensor_method(node, func) \
                and not self._off_mps(func.value):
            self._check(node, func.attr, found[0].name, f"`.{method}()`")

    def _off_mps(self, tensor: cst.BaseExpression) -> bool:
        """Whether a test around the call says `tensor` is quantized or on the CPU: the body
        of `if x.is_quantized:` (or of a conditional expression), the right of
        `x.is_quantized and ...`, the `else` of `if not x.is_quantized:`."""
        if not isinstance(tensor, (cst.Name, cst.Attribute)):
            return False
        stack = self.ctx.stack
        for parent, child in itertools.pairwise(stack):
            if isinstance(parent, (cst.If, cst.IfExp)):
                if (child is parent.body and _tests_off_mps(parent.test, tensor, True)) or \
                        (child is parent.orelse and _tests_off_mps(parent.test, tensor, False)):
                    return True
            elif isinstance(parent, cst.BooleanOperation) and child is parent.right:
                passed = isinstance(parent.operator, cst.And)
                if _tests_off_mps(parent.left, tensor, passed):
                    return True
        return False

    def _check(self, call: cst.Call, where: cst.CSTNode, name: str, shown: str) -> None:
        cov = self._coverage
        missing = cov.missing_for_call(name, _keywords(call))
        if not missing:
            return
        raising = [op for op in missing if cov.status(op) is OpStatus.NO_MPS]
        slow = [op for op in missing if op not in raising]
        message, severity = self._describe(shown, raising, slow)
        self.report(where, message, severity=severity)

    def _describe(self, shown: str, raising: list[str], slow: list[str]
                  ) -> tuple[str, Severity]:
        version = f"torch {self._coverage.version}{self._nearest_note()}"
        parts: list[str] = []
        severity = Severity.WARNING
        if raising:
            parts.append(f"{shown} needs {_ops(raising)}, with no MPS kernel in {version}: "
                         f"{self._fallback_advice()}")
            if self._fallback != "before":
                severity = Severity.ERROR
        if slow:
            parts.append(f"{shown} needs {_ops(slow)}, which always runs on the CPU under MPS "
                         f"in {version} (slow)")
        return "; ".join(parts), severity

    def _fallback_advice(self) -> str:
        if self._fallback == "before":
            return f"it runs on the CPU through {_FALLBACK_VARIABLE}=1, set here (slow)"
        advice = (f"NotImplementedError on a Mac unless {_FALLBACK_VARIABLE}=1 is set before "
                  "importing torch (then it runs on the CPU)")
        if self._fallback == "after":
            advice += f"; this module sets {_FALLBACK_VARIABLE} after importing torch: too late"
        return advice

    def _nearest_note(self) -> str:
        wanted = self.ctx.settings.target_torch
        major, minor = (int(p) for p in self._coverage.version.split(".")[:2])
        if (major, minor) == wanted:
            return ""
        return f" (nearest table to target {wanted[0]}.{wanted[1]})"

    # -- which calls -----------------------------------------------------------------------
    def _tensor_method(self, call: cst.Call, func: cst.Attribute) -> bool:
        if not self._imports_torch or func.attr.value not in self._coverage.method_names:
            return False
        receiver = func.value
        if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
            return False
        if self._is_import(receiver):
            return False  # `stats.mode(...)`, `np.take(...)`: a module's function
        methods = tables.load("tensor_methods.toml")
        if func.attr.value not in methods["shared_names"]:
            return True
        return any(a.keyword is not None and a.keyword.value in methods["torch_keywords"]
                   for a in call.args) or self._made_by_torch(receiver)

    def _is_import(self, expr: cst.BaseExpression) -> bool:
        return self.ctx.imports_root(expr)

    def _made_by_torch(self, expr: cst.BaseExpression) -> bool:
        """`torch.randn(3).mode()`, or `t.mode()` after `t = torch.randn(3)` in the module."""
        if isinstance(expr, cst.Name):
            value = self._assigned_once(expr.value)
            expr = expr if value is None else value
        while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            name = self.ctx.call_name(expr)
            if name is not None:
                return _returns_tensor(name)
            expr = expr.func.value
        return False

    def _on_cpu(self, call: cst.Call) -> bool:
        """`torch.linalg.eig(A.cpu())`, `torch.mode(x, device="cpu")`: explicitly on the CPU."""
        device = call_args.keyword(call.args, "device")
        if device is not None and isinstance(device.value, cst.SimpleString) \
                and str(device.value.evaluated_value).startswith("cpu"):
            return True
        first = call_args.positional(call.args, 0)
        return first is not None and isinstance(first.value, cst.Call) \
            and isinstance(first.value.func, cst.Attribute) \
            and first.value.func.attr.value == "cpu"

    # -- per-module facts ------------------------------------------------------------------
    @cached_property
    def _coverage(self) -> Coverage:
        major, minor = self.ctx.settings.target_torch
        return load_coverage(f"{major}.{minor}")

    @cached_property
    def _imports_torch(self) -> bool:
        return any(q is not None and (q == "torch" or q.startswith("torch."))
                   for q in self.ctx.aliases.values())

    @cached_property
    def _named_anywhere(self) -> dict[str, list[cst.BaseExpression]]:
        return scopes.named_anywhere(self.ctx.module)

    @cached_property
    def _once(self) -> dict[str, cst.BaseExpression | None]:
        return {}

    def _assigned_once(self, name: str) -> cst.BaseExpression | None:
        """The value of `name` where the module assigns it once, at any level: enough to see
        `t = torch.randn(3)`. The functions LibCST did not read are asked about it alone."""
        if name not in self._once:
            values = self._named_anywhere.get(name, [])
            hidden = self.ctx.hidden.assigned_to(name)  # in the functions LibCST did not read
            self._once[name] = None if len(values) + len(hidden) != 1 else values[0] \
                if values else self.ctx.hidden.expression(hidden[0])
        return self._once[name]

    @cached_property
    def _fallback(self) -> str | None:
        """"before"/"after": the module sets PYTORCH_ENABLE_MPS_FALLBACK before/after its
        first torch import, at top level; None: it doesn't."""
        if _FALLBACK_VARIABLE not in self.ctx.code:  # no statement's code can name it
            return None
        torch_seen = False
        for statement in self.ctx.module.body:
            if _imports_torch_statement(statement):
                torch_seen = True
            elif _sets_fallback(self.ctx.module, statement):
                return "after" if torch_seen else "before"
        return None


def _tests_off_mps(test: cst.BaseExpression, tensor: cst.BaseExpression, passed: bool) -> bool:
    """Whether `test` having passed (`passed`) or failed says `tensor` is off MPS:
    `tensor.is_quantized` passed, `not tensor.is_cpu` failed, one operand of a passed `and`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _tests_off_mps(test.expression, tensor, not passed)
    if isinstance(test, cst.BooleanOperation):
        both = isinstance(test.operator, cst.And) == passed  # an `and` passed, an `or` failed
        if both:
            return _tests_off_mps(test.left, tensor, passed) \
                or _tests_off_mps(test.right, tensor, passed)
        return False
    return passed and isinstance(test, cst.Attribute) and test.attr.value in _OFF_MPS_TESTS \
        and test.value.deep_equals(tensor)


def _returns_tensor(name: str) -> bool:
    namespace, _, leaf = name.rpartition(".")
    return namespace in _TENSOR_NAMESPACES and leaf.islower() and leaf not in _NOT_TENSORS


def _sets_fallback(module: cst.Module, statement: cst.CSTNode) -> bool:
    """`os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"`, `os.environ.setdefault(...)`,
    `os.putenv(...)`: a top-level statement naming the variable and the environment."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    code = module.code_for_node(statement)
    return _FALLBACK_VARIABLE in code and ("environ" in code or "putenv" in code)


def _imports_torch_statement(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Import) and any(
                cst.Module([]).code_for_node(a.name).split(".")[0] == "torch"
                for a in small.names):
            return True
        if isinstance(small, cst.ImportFrom) and small.module is not None \
                and cst.Module([]).code_for_node(small.module).split(".")[0] == "torch":
            return True
    return False


def _keywords(call: cst.Call) -> dict[str, object]:
    """The call's keyword arguments, as Python values where they are literals."""
    found: dict[str, object] = {}
    for arg in call.args:
        if arg.keyword is not None:
            found[arg.keyword.value] = _literal(arg.value)
    return found


def _literal(expr: cst.BaseExpression) -> object:
    if isinstance(expr, cst.Name) and expr.value in _LITERALS:
        return _LITERALS[expr.value]
    if isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float)):
        return expr.evaluated_value
    return UNKNOWN_VALUE


def _ops(ops: list[str]) -> str:
    return ", ".join(f"`aten::{op.split('.')[0]}`" for op in ops)

"""CUD603: pinned memory, which needs an accelerator (and does nothing on MPS's DataLoader)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from cudalint.engine.contract import Invalid
from cudalint.engine.first_pass.prefilter import GAP, Terms, word
from cudalint.engine.walk.context import PythonContext, Settings
from cudalint.finding import Severity
from cudalint.rules.assignments import TracksAssignments

_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
_LOADER_MESSAGE = (
    "`pin_memory=True` only helps on CUDA: the DataLoader warns and does not pin on MPS or "
    "CPU; use `pin_memory=torch.cuda.is_available()`"
)
_OTHER_MESSAGE = (
    "`pin_memory=True` pins host memory for CUDA copies: off CUDA it does nothing (a DataLoader "
    "warns) or raises without an accelerator; use `pin_memory=torch.cuda.is_available()`"
)
_FACTORY_MESSAGE = (
    "`pin_memory=True` raises on a machine without an accelerator (`RuntimeError`); "
    "pin only when CUDA is in use"
)
_METHOD_MESSAGE = (
    "`.pin_memory()` raises on a machine without an accelerator (`RuntimeError: Cannot access "
    "accelerator device when none is available`); pin only when CUDA is in use"
)
_MAX_DEPTH = 4
# What may be `True`, or a name assigned it (`PIN = True`): a parenthesized identifier other
# than `False` and `None` (a non-ASCII letter starts a name too).
_MAYBE_TRUE = (rf"{GAP}(?:\({GAP})*(?!(?:False|None)(?![A-Za-z0-9_]))"
               r"(?:[A-Za-z_]|[^\x00-\x7f])")
# Each spelling a finding has: a call (`.pin_memory()`; not `def pin_memory(`), a keyword
# given what may be True (`pin_memory=True`, not `self.pin_memory = ...`), or a dict's
# `"pin_memory"` key given one (`{"pin_memory": True}`).
_PINNING = (
    rf"{word('pin_memory')}(?:(?<!def pin_memory){GAP}\("
    rf"|(?<!\.pin_memory){GAP}={_MAYBE_TRUE}"
    rf"|(?<=['\"]pin_memory)(?:'|\"){{1,3}}{GAP}:{_MAYBE_TRUE})"
)
_Entry = tuple[cst.CSTNode, bool]  # a `pin_memory: True` entry, and whether it is guarded


class PinnedMemory(TracksAssignments):
    """
    ## What it does
    Finds `pin_memory=True`, directly or through a kwargs dict passed with `**`
    (`{"pin_memory": True}`, `dict(pin_memory=True)`, `kwargs.update(...)`), and
    `.pin_memory()` calls. `pin_memory=torch.cuda.is_available()` or `pin_memory=use_cuda`
    is already conditional and is not reported.

    ## Why is this bad?
    Pinned (page-locked) memory speeds up copies to an NVIDIA GPU. A DataLoader with
    `pin_memory=True` on a Mac only warns (`'pin_memory' argument is set as true but not
    supported on MPS now`) and does not pin: harmless (info). `.pin_memory()` and
    `torch.empty(..., pin_memory=True)` raise `RuntimeError` on a machine without an
    accelerator (warning).

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, pin_memory=True)
    batch = batch.pin_memory()
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, pin_memory=torch.cuda.is_available())
    if torch.cuda.is_available():
        batch = batch.pin_memory()
    ```
    """

    code = "CUD603"
    name = "pinned-memory"
    message = _LOADER_MESSAGE
    severity = Severity.INFO
    site_severities = (Severity.WARNING,)
    VALID = (
        "loader = DataLoader(ds, pin_memory=torch.cuda.is_available())\n",
        "loader = DataLoader(ds, pin_memory=use_cuda)\n",
        "loader = DataLoader(ds, pin_memory=False)\n",
        "loader = DataLoader(ds, pin_memory=args.pin_memory)\n",
        "kwargs = {'pin_memory': True}\nprint(kwargs)\n",
        "kwargs = {'pin_memory': False}\nloader = DataLoader(ds, **kwargs)\n",
        "print('set pin_memory=True for speed')\n",
        "if batch.is_pinned():\n    pass\n",
        "from torch.utils.data import _utils\ndata = _utils.pin_memory.pin_memory(data, device)\n",
        "class Batch:\n    def pin_memory(self):\n        self.x = self.x.pin_memory()\n"
        "        return self\n",
    )
    INVALID = (
        Invalid("from torch.utils.data import DataLoader\nl = DataLoader(ds, pin_memory=True)\n"),
        Invalid(
            "loader_kwargs = {'num_workers': 4, 'pin_memory': True}\n"
            "loader = DataLoader(ds, **loader_kwargs)\n"
        ),
        Invalid(
            "def make(ds):\n    kw = dict(batch_size=8, pin_memory=True)\n"
            "    return DataLoader(ds, shuffle=True, **kw)\n"
        ),
        Invalid(
            "train_kwargs = {'batch_size': 64}\ncuda_kwargs = {'pin_memory': True}\n"
            "train_kwargs.update(cuda_kwargs)\nloader = DataLoader(ds, **train_kwargs)\n"
        ),
        Invalid("PIN = True\nloader = DataLoader(ds, pin_memory=PIN)\n"),
        Invalid("x = batch.pin_memory()\n"),
        Invalid("import torch\nbuf = torch.empty(1024, pin_memory=True)\n"),
    )

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """A finding is a `.pin_memory()` call, or `pin_memory` given what may be True, as a
        keyword or a dict's key, where it is or where a call in the function naming the dict
        unpacks it (`**loader_kwargs`): not `pin_memory=False`, a parameter
        (`pin_memory: bool = False`) or an attribute (`self.pin_memory = pin_memory`)."""
        return Terms(patterns=(_PINNING,), follow=(r"\*\*",))

    def __init__(self, ctx: PythonContext) -> None:
        super().__init__(ctx)
        # name -> its `.update(...)` calls so far, with whether each was under a CUDA check
        self._update_scopes: list[dict[str, list[tuple[bool, cst.Call]]]] = [{}]

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "pin_memory":
            if not self._in_pin_memory_method() and not self._is_import(node.func.value):
                self.report(node.func.attr, _METHOD_MESSAGE, severity=Severity.WARNING)
            return
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "update":
            return  # `kwargs.update(pin_memory=True)` is followed where kwargs is used
        message, severity = _wording(self.ctx, node)
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "pin_memory":
                if self._is_true(arg.value):
                    self.report(arg, message, severity=severity)
            elif arg.star == "**":
                for entry, guarded in self._entries(arg.value, 0):
                    self.report(entry, message, severity=severity,
                                guarded=guarded or self.ctx.is_guarded())

    def _is_true(self, expr: cst.BaseExpression) -> bool:
        expr, _ = self.resolve(expr)
        return isinstance(expr, cst.Name) and expr.value == "True"

    def _is_import(self, receiver: cst.BaseExpression) -> bool:
        """`_utils.pin_memory.pin_memory(data)`: a module's function, not the tensor method."""
        return self.ctx.imports_root(receiver)

    def _in_pin_memory_method(self) -> bool:
        """A batch class's own `pin_memory()`: the DataLoader calls it only when it pins."""
        return any(isinstance(n, cst.FunctionDef) and n.name.value == "pin_memory"
                   for n in self.ctx.ancestors())

    def _entries(self, expr: cst.BaseExpression, depth: int,
                 guarded: bool = False) -> Iterator[_Entry]:
        """The `pin_memory: True` entries of a kwargs dict, each with whether it was set
        under a CUDA check."""
        if depth > _MAX_DEPTH:
            return
        value, binding = self.resolve(expr)
        guarded = guarded or (binding is not None and binding.guarded)
        if isinstance(value, cst.IfExp):
            for branch in (value.body, value.orelse):
                yield from self._entries(branch, depth + 1, guarded)
        elif isinstance(value, cst.Dict):
            yield from self._dict_entries(value, depth, guarded)
        elif isinstance(value, cst.Call) and self.ctx.call_name(value) == "dict":
            yield from self._keyword_entries(value.args, depth, guarded)
        if isinstance(expr, cst.Name):
            for update_guarded, call in self._update_scopes[-1].get(expr.value, ()):
                yield from self._keyword_entries(call.args, depth + 1, guarded or update_guarded)

    def _dict_entries(self, node: cst.Dict, depth: int, guarded: bool) -> Iterator[_Entry]:
        for element in node.elements:
            if isinstance(element, cst.StarredDictElement):
                yield from self._entries(element.value, depth + 1, guarded)
            elif isinstance(element, cst.DictElement) \
                    and isinstance(element.key, cst.SimpleString) \
                    and element.key.evaluated_value == "pin_memory" \
                    and self._is_true(element.value):
                yield element, guarded

    def _keyword_entries(self, args: Sequence[cst.Arg], depth: int,
                         guarded: bool) -> Iterator[_Entry]:
        for arg in args:
            if arg.keyword is not None and arg.keyword.value == "pin_memory":
                if self._is_true(arg.value):
                    yield arg, guarded
            elif arg.keyword is None:
                yield from self._entries(arg.value, depth + 1, guarded)

    # -- remembering `kwargs.update(...)` calls, per scope -----------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._update_scopes.append({})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().leave_FunctionDef(node)
        self._update_scopes.pop()

    def leave_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "update" \
                and isinstance(func.value, cst.Name):
            self._update_scopes[-1].setdefault(func.value.value, []).append(
                (self.ctx.is_guarded(), node))


def _wording(ctx: PythonContext, call: cst.Call) -> tuple[str, Severity]:
    """A torch function (a tensor factory, `save_on_cpu`) raises without an accelerator; a
    DataLoader only warns; anything else taking the flag is most often a wrapper of one."""
    name = ctx.call_name(call) or ""
    if name in _LOADERS or name.rpartition(".")[2] == "DataLoader":
        return _LOADER_MESSAGE, Severity.INFO
    if name.startswith("torch."):
        return _FACTORY_MESSAGE, Severity.WARNING
    return _OTHER_MESSAGE, Severity.INFO

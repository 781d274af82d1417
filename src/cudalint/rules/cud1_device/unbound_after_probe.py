"""CUD114: a name bound only under a CUDA check, and read after it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.contract import Invalid, PythonRule
from cudalint.engine.first_pass.prefilter import PROBE_PATTERN, Terms
from cudalint.engine.walk import visiting
from cudalint.engine.walk.bindings import target_names
from cudalint.engine.walk.guards import ends_program, is_cuda_probe

if TYPE_CHECKING:
    from cudalint.engine.walk.context import PythonContext, Settings

# The checks of another accelerator: an `elif` of one of these gives no name to a CPU-only
# machine either (`elif torch.backends.mps.is_available():` without binding it).
_OTHER_PROBES = frozenset({
    "torch.backends.mps.is_available", "torch.backends.mps.is_built", "torch.mps.is_available",
    "torch.xpu.is_available", "torch.npu.is_available",
})
_OTHER_DEVICES = frozenset({"mps", "xpu", "npu"})
_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


class UnboundAfterProbe(PythonRule):
    """
    ## What it does
    Finds a name bound only under a CUDA check (`if torch.cuda.is_available():`,
    `if x.is_cuda:`, `if device.type == "cuda":`, a variable holding one of these) that has no
    `else` binding it (or only another accelerator's `elif`), and is read after the `if`,
    outside any CUDA check. A binding under another accelerator a Mac lacks, in an `elif` or
    a separate `if` (`if torch.xpu.is_available(): n = ...`), binds nothing on a Mac either;
    one under an MPS check does. The finding is at the first such read, and is never
    lowered: the read itself runs on every machine.

    ## Why is this bad?
    Off CUDA the branch never runs, so the name is never bound: the read raises
    `UnboundLocalError` in a function (`NameError` at module level) on a Mac or a CPU-only
    machine, often far from the check.

    ## Example
    ```python
    if torch.cuda.is_available():
        n_gpus = torch.cuda.device_count()
    elif torch.backends.mps.is_available():
        print("using MPS")
    for rank in range(n_gpus):
        ...
    ```

    ## Use instead
    Bind the name on every path: before the `if`, or in an `else`.
    ```python
    n_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 1
    for rank in range(n_gpus):
        ...
    ```
    """

    code = "CUD114"
    name = "unbound-after-cuda-check"
    message = "Name bound only under a CUDA check is read after it: unbound on a Mac"
    words = frozenset({"cuda"})
    VALID = (
        # bound before the `if`
        "import torch\n\ndef gpus():\n    n_gpus = 1\n    if torch.cuda.is_available():\n"
        "        n_gpus = torch.cuda.device_count()\n    return range(n_gpus)\n",
        # an `else` binding it
        "import torch\nif torch.cuda.is_available():\n    n_gpus = torch.cuda.device_count()\n"
        "else:\n    n_gpus = 0\nprint(n_gpus)\n",
        # read inside the guard only
        "import torch\n\ndef main():\n    if torch.cuda.is_available():\n"
        "        props = torch.cuda.get_device_properties(0)\n        print(props.name)\n",
        # the else path leaves the function
        "import torch\n\ndef gpus():\n    if torch.cuda.is_available():\n"
        "        n_gpus = torch.cuda.device_count()\n    else:\n        return []\n"
        "    return list(range(n_gpus))\n",
        "import torch\n\ndef gpus():\n    if torch.cuda.is_available():\n"
        "        n_gpus = torch.cuda.device_count()\n    else:\n"
        "        raise RuntimeError('no GPU')\n    return list(range(n_gpus))\n",
        # a later read under the same check
        "import torch\n\ndef run(x):\n    if torch.cuda.is_available():\n"
        "        stream = torch.cuda.Stream()\n    y = x * 2\n    if torch.cuda.is_available():\n"
        "        stream.synchronize()\n    return y\n",
        # the other accelerator binds it too
        "import torch\nif torch.cuda.is_available():\n    device = 'cuda'\n"
        "elif torch.backends.mps.is_available():\n    device = 'mps'\nmodel.to(device)\n",
        # a user's switch is no probe; an attribute of the name is not a read of it
        "def main(args):\n    if args.cuda:\n        n_gpus = 2\n    return range(n_gpus)\n",
        "import torch\n\ndef f(cfg):\n    if torch.cuda.is_available():\n"
        "        count = torch.cuda.device_count()\n    return cfg.count\n",
    )
    INVALID = (
        Invalid(
            "import torch\n\ndef main():\n    if torch.cuda.is_available():\n"
            "        n_gpus = torch.cuda.device_count()\n"
            "    elif torch.backends.mps.is_available():\n        print('MPS')\n"
            "    for rank in range(n_gpus):\n        spawn(rank)\n",
            guarded=False,
        ),
        Invalid(
            "import torch\nif torch.cuda.is_available():\n"
            "    N_GPUS = torch.cuda.device_count()\nWORLD = N_GPUS * 2\n",
            guarded=False,
        ),
        Invalid(
            "import torch\n\ndef setup(x):\n    if x.is_cuda:\n"
            "        stream = torch.cuda.current_stream()\n    return stream, x\n"
        ),
        Invalid(
            "import torch\n\ndef setup():\n    use_cuda = torch.cuda.is_available()\n"
            "    if use_cuda:\n        props = torch.cuda.get_device_properties(0)\n"
            "    else:\n        print('running on the CPU')\n    return props.total_memory\n"
        ),
    )

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """What a CUDA check spells (`guards.is_cuda_probe`), as CUD112 reads it."""
        return Terms(words=cls.words, patterns=(PROBE_PATTERN,))

    def __init__(self, ctx: PythonContext) -> None:
        super().__init__(ctx)
        # id of a read Name -> (the Name, the `if` whose CUDA branch alone binds it)
        self._pending: dict[int, tuple[cst.Name, cst.If]] = {}
        self._reported: set[tuple[int, str]] = set()

    def visit_If(self, node: cst.If) -> None:
        block = self.ctx.parent()
        if type(block) not in (cst.IndentedBlock, cst.Module) or self.ctx.is_guarded():
            return  # an `elif`, or code that runs only with CUDA anyway
        if not is_cuda_probe(self.ctx, node.test) or ends_program(self.ctx, node.body):
            return
        names = self._unbound_off_cuda(node)
        if not names:
            return
        scope = self._scope()
        statements = list(getattr(block, "body", ()))
        # what an `elif`, or a separate `if` of the block, of an accelerator a Mac lacks
        # binds (`if torch.xpu.is_available():`)
        skipped = [node.body, *(s.body for s in statements if type(s) is cst.If
                                and s is not node and self._other_accelerator_only(s))]
        branch = node.orelse
        while isinstance(branch, cst.If):
            if self._other_accelerator_only(branch):
                skipped.append(branch.body)
            branch = branch.orelse
        names -= _bound_elsewhere(self.ctx.module if scope is None else scope, skipped)
        if scope is None:
            names -= self.ctx.hidden.top_level_names
        if not names:
            return
        following = statements[statements.index(node) + 1:] if node in statements else []
        reads = _Reads(names)
        for statement in following:
            visiting.visit(statement, reads)
        for name in reads.found:
            self._pending[id(name)] = (name, node)

    def visit_Name(self, node: cst.Name) -> None:
        pending = self._pending.pop(id(node), None)
        if pending is None or pending[0] is not node or self.ctx.is_guarded():
            return
        key = (id(pending[1]), node.value)
        if key in self._reported:
            return
        self._reported.add(key)
        error = "`UnboundLocalError`" if self._scope() is not None else "`NameError`"
        self.report(node, f"`{node.value}` is bound only under a CUDA check and read after it: "
                          f"{error} on a Mac or a CPU-only machine", guarded=False)

    def _scope(self) -> cst.FunctionDef | None:
        for ancestor in self.ctx.ancestors():
            if type(ancestor) is cst.FunctionDef:
                return ancestor  # type: ignore[return-value]
        return None

    def _unbound_off_cuda(self, node: cst.If) -> set[str]:
        """The names the CUDA branch binds that a path without CUDA leaves unbound: no
        `else`, or one that neither binds them nor leaves; `elif`s of other accelerators."""
        names = _bound_in(node.body)
        branch = node.orelse
        while isinstance(branch, cst.If):
            device = self._other_accelerator(branch.test)
            if device is None:
                return set()
            if device == "mps" and not ends_program(self.ctx, branch.body):
                names -= _bound_in(branch.body)  # a Mac binds them there
            branch = branch.orelse
        if isinstance(branch, cst.Else):
            if ends_program(self.ctx, branch.body):
                return set()
            names -= _bound_in(branch.body)
        return names

    def _other_accelerator(self, test: cst.BaseExpression) -> str | None:
        """The other accelerator a test checks for (`"mps"`, `"xpu"`, ...), or None."""
        for found in visiting.find_all(test, (cst.Call, cst.SimpleString)):
            if isinstance(found, cst.Call):
                name = self.ctx.call_name(found)
                if name in _OTHER_PROBES:
                    return name.split(".")[-2]  # torch.xpu.is_available -> "xpu"
            if isinstance(found, cst.SimpleString) and found.evaluated_value in _OTHER_DEVICES:
                return str(found.evaluated_value)
        return None

    def _other_accelerator_only(self, node: cst.If) -> bool:
        """A separate `if` of the same block whose body runs only with an accelerator a Mac
        lacks (`if torch.xpu.is_available():`): what it binds stays unbound on a Mac."""
        device = self._other_accelerator(node.test)
        return device is not None and device != "mps"


def _bound_in(suite: cst.CSTNode) -> set[str]:
    finder = _Bindings(skip=[])
    visiting.visit(suite, finder)
    return finder.names


def _bound_elsewhere(scope: cst.FunctionDef | cst.Module, bodies: list[cst.BaseSuite],
                     ) -> set[str]:
    """What the scope binds outside the CUDA branch and the other `bodies` (parameters and
    `global` names included)."""
    finder = _Bindings(skip=bodies)
    if isinstance(scope, cst.Module):
        for statement in scope.body:
            visiting.visit(statement, finder)
        return finder.names
    visiting.visit(scope.params, finder)
    visiting.visit(scope.body, finder)
    return finder.names


class _Bindings(cst.CSTVisitor):
    """The names a block binds in its own scope (nested functions and classes bind their
    own name only), and those it declares `global`/`nonlocal`."""

    def __init__(self, skip: list[cst.BaseSuite]) -> None:
        super().__init__()
        self.names: set[str] = set()
        self._skip = {id(node) for node in skip}

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self._skip:
            return False
        return super().on_visit(node)

    def _add(self, target: cst.CSTNode | None) -> None:
        if target is not None:
            self.names.update(target_names(target))

    def visit_Param(self, node: cst.Param) -> None:
        self._add(node.name)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._add(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._add(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._add(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._add(node.name)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            head: cst.BaseExpression = node.name
            while isinstance(head, cst.Attribute):
                head = head.value
            self._add(head)

    def visit_Global(self, node: cst.Global) -> None:
        self.names.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.names.update(item.name.value for item in node.names)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._add(node.name)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._add(node.name)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_CompFor(self, node: cst.CompFor) -> None:
        return None  # a comprehension's variable is its own


class _Reads(cst.CSTVisitor):
    """The reads of `names` in the statements visited, outside nested functions and classes
    (which run later, if ever)."""

    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names
        self.found: list[cst.Name] = []
        self._not_reads: set[int] = set()

    def _mark(self, target: cst.CSTNode | None) -> None:
        if isinstance(target, cst.Name):
            self._not_reads.add(id(target))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._mark(element.value)
        elif isinstance(target, cst.StarredElement):
            self._mark(target.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._not_reads.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        self._mark(node.keyword)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._mark(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._mark(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._mark(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._mark(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._mark(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._mark(node.name)

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Global(self, node: cst.Global) -> bool:
        return False

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names and id(node) not in self._not_reads:
            self.found.append(node)

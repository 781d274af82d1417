"""CUD103: a device choice between CUDA and CPU that never considers MPS."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import libcst as cst

from cudalint.engine.contract import Invalid, NodeFix, PythonRule
from cudalint.engine.first_pass.prefilter import (
    LETTER_ESCAPE,
    PROBE_PATTERN,
    Terms,
    may_spell,
    word,
)
from cudalint.engine.walk import visiting
from cudalint.engine.walk.guards import (
    is_cuda_absence,
    is_cuda_probe,
    names_cuda_flag,
)
from cudalint.engine.walk.visiting import find_all
from cudalint.finding import Severity
from cudalint.rules.args import replace_message
from cudalint.rules.cud1_device.device_strings import (
    DeviceString,
    cuda_device_expr,
    device_replacement,
    is_cpu_device,
    makes_torch_device,
)
from cudalint.rules.cud1_device.prose import in_prose

if TYPE_CHECKING:
    from collections.abc import Callable

    from cudalint.engine.walk.context import PythonContext, Settings

T = TypeVar("T")
# What a choice's test names besides the word `cuda` (`use_cuda`, `x.is_cuda`, an alias of
# `torch.cuda.is_available`): with an escape (`"\\x63uda"`), the choice names no `cuda`.
_TESTS = rf"{word('is_available')}|{PROBE_PATTERN}"
_MPS_PROBES = frozenset({"torch.backends.mps.is_available", "torch.backends.mps.is_built"})
_RETURNED = "return"  # what a choice returned is made for (a keyword: no target's code)
_BINDINGS = (cst.Assign, cst.AnnAssign, cst.Return)


@dataclass(frozen=True)
class Choice:
    """`"cuda" if torch.cuda.is_available() else "cpu"`, as an expression or an if/else."""

    node: cst.IfExp | cst.If
    cuda: DeviceString
    as_device: bool  # the choice makes a torch.device, not a str
    exact_probe: bool  # the test is exactly torch.cuda.is_available()
    target: cst.AssignTarget | None = None  # the if/else form assigns this


def _exact_probe(ctx: PythonContext, test: cst.BaseExpression) -> bool:
    return isinstance(test, cst.Call) and ctx.call_name(test) == "torch.cuda.is_available" \
        and not test.args


def choice_of(ctx: PythonContext, node: cst.CSTNode) -> Choice | None:
    if isinstance(node, cst.IfExp):
        return _expression_choice(ctx, node)
    if isinstance(node, cst.If):
        return _statement_choice(ctx, node)
    return None


def selects_cuda(ctx: PythonContext, test: cst.BaseExpression) -> bool:
    """An availability check, or a user's switch for CUDA (`args.cuda`, `opt.use_cuda`)."""
    if is_cuda_probe(ctx, test):
        return True
    if isinstance(test, cst.Attribute):
        return names_cuda_flag(test.attr.value)
    return isinstance(test, cst.Name) and names_cuda_flag(test.value)


def _oriented(ctx: PythonContext, test: cst.BaseExpression, then: T, other: T
              ) -> tuple[T, T, bool] | None:
    """(the CUDA branch, the other branch, whether the test is exactly the availability
    check), whichever way round the test is: `"cpu" if not torch.cuda.is_available() else
    "cuda"` is the same choice."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) \
            and is_cuda_absence(ctx, test):
        return other, then, _exact_probe(ctx, test.expression)
    if selects_cuda(ctx, test):
        return then, other, _exact_probe(ctx, test)
    return None


def _expression_choice(ctx: PythonContext, node: cst.IfExp) -> Choice | None:
    oriented = _oriented(ctx, node.test, node.body, node.orelse)
    if oriented is None or not is_cpu_device(ctx, oriented[1]):
        return None
    cuda = cuda_device_expr(ctx, oriented[0])
    if cuda is None:
        return None
    return Choice(node, cuda, makes_torch_device(ctx, oriented[0]), oriented[2])


def _single_assign(block: cst.BaseSuite) -> cst.Assign | None:
    if not isinstance(block, cst.IndentedBlock) or len(block.body) != 1:
        return None
    line = block.body[0]
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    statement = line.body[0]
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        return statement
    return None


def _statement_choice(ctx: PythonContext, node: cst.If) -> Choice | None:
    if not isinstance(node.orelse, cst.Else):
        return None
    first, second = _single_assign(node.body), _single_assign(node.orelse.body)
    if first is None or second is None:
        return None
    oriented = _oriented(ctx, node.test, first, second)
    if oriented is None or not is_cpu_device(ctx, oriented[1].value):
        return None
    then, other, exact = oriented
    code = ctx.module.code_for_node
    if code(then.targets[0].target) != code(other.targets[0].target):
        return None
    cuda = cuda_device_expr(ctx, then.value)
    if cuda is None:
        return None
    return Choice(node, cuda, makes_torch_device(ctx, then.value), exact, then.targets[0])


def inside_choice(ctx: PythonContext) -> bool:
    """Whether the node being visited sits in a CUD103 choice (which reports it instead)."""
    return any(choice_of(ctx, node) is not None for node in ctx.ancestors()[:8])


def in_cuda_branch_of_cpu_choice(ctx: PythonContext) -> bool:
    """Whether the node being visited is in the CUDA branch of a choice whose other way picks
    the CPU: `if torch.cuda.is_available(): return torch.device("cuda:0")` followed by
    `return torch.device("cpu")`, or an `else:` that does (with more statements than CUD103's
    plain assignments). Rewriting the CUDA branch alone changes nothing off CUDA: the choice
    must be rewritten whole."""
    stack = ctx.stack
    for index in range(len(stack) - 2, -1, -1):
        node = stack[index]
        if not isinstance(node, cst.If) or stack[index + 1] is not node.body \
                or not is_cuda_probe(ctx, node.test):
            continue
        other: list[cst.CSTNode] = [node.orelse] if node.orelse is not None else []
        parent = stack[index - 1] if index else None
        if _exits(node.body) and isinstance(parent, (cst.IndentedBlock, cst.Module)):
            siblings = list(parent.body)
            other += siblings[siblings.index(node) + 1:] if node in siblings else []
        return any(isinstance(s, cst.SimpleString) and s.evaluated_value == "cpu"
                   for part in other for s in find_all(part, (cst.SimpleString,)))
    return False


def _exits(block: cst.BaseSuite) -> bool:
    """A block whose last statement returns or raises."""
    if not isinstance(block, cst.IndentedBlock) or not block.body:
        return False
    last = block.body[-1]
    return isinstance(last, cst.SimpleStatementLine) \
        and isinstance(last.body[-1], (cst.Return, cst.Raise))


class CudaOrCpuChoice(PythonRule):
    """
    ## What it does
    Finds device choices that pick CUDA when it is available and otherwise fall back to the
    CPU: `"cuda" if torch.cuda.is_available() else "cpu"`, its `torch.device(...)` form, the
    same choice written as an `if`/`else` assignment, and either written the other way round
    (`"cpu" if not torch.cuda.is_available() else "cuda"`). A choice is not reported where
    its function already gives the same name (as written: `self.device` is not `device`), or
    what it returns, an MPS branch: an `"mps"` value, a value that checks for MPS
    (`"mps" if torch.backends.mps.is_available() else device`), or whatever is assigned or
    returned under an `if`/`elif` checking for MPS. A check for MPS that sets another name
    (an AMP dtype) or only logs does not count. A choice given to no name, and one at module
    level, is not reported where its function (module) checks for MPS anywhere.

    ## Why is this bad?
    On an Apple Silicon Mac the choice lands on the CPU and never uses the GPU (MPS), so the
    code runs, but slowly.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ```

    ## Use instead
    ```python
    from cudalint.device import pick_device

    device = pick_device()
    ```

    ## Fix safety
    Safe when the test is exactly `torch.cuda.is_available()`: `pick_device()` returns CUDA
    wherever CUDA is available. A `str` choice stays a `str` (`str(pick_device())`). A test
    that also reads a user's flag (`args.cuda and torch.cuda.is_available()`) has no fix,
    since `pick_device()` would ignore the flag. `pick_device()` asks NVML rather than the CUDA
    runtime (see CUD101), which answers as `torch.cuda.is_available()` does except where NVML
    sees a GPU that the CUDA runtime cannot use (a driver older than the torch build): there
    the original fell back to the CPU with torch's warning, the fixed code stops at its first
    CUDA call with torch's error about the driver.
    """

    code = "CUD103"
    follows_assignments = False
    name = "cuda-or-cpu-choice"
    message = "Device choice between CUDA and CPU skips MPS"
    severity = Severity.WARNING
    words = frozenset({"cuda"})
    VALID = (
        "device = 'mps' if torch.backends.mps.is_available() else 'cpu'\n",
        "device = ('cuda' if torch.cuda.is_available() else\n"
        "          'mps' if torch.backends.mps.is_available() else 'cpu')\n",
        "x = 'gpu' if torch.cuda.is_available() else 'cpu'\n",
        "print('cuda' if torch.cuda.is_available() else 'cpu')\n",
        "def pick():\n    if torch.backends.mps.is_available():\n        return 'mps'\n"
        "    return 'cuda' if torch.cuda.is_available() else 'cpu'\n",
        "def pick():\n    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "    if getattr(torch.backends, 'mps', None) and args.mps:\n"
        "        device = torch.device('mps')\n    return device\n",
        "def pick():\n    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "    device = 'mps' if torch.backends.mps.is_available() else device\n"
        "    return device\n",
    )
    INVALID = (
        Invalid(
            "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n",
            "from cudalint.device import pick_device\n\ndevice = pick_device()\n",
        ),
        Invalid(
            "import torch\nDEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'\n",
            "from cudalint.device import pick_device\n\n"
            "DEVICE = str(pick_device())\n",
        ),
        Invalid(
            "import torch\n"
            "dev = torch.device('cuda:1') if torch.cuda.is_available() else torch.device('cpu')\n",
            "from cudalint.device import pick_device\n\ndev = pick_device(1)\n",
        ),
        Invalid(
            "import torch\n\nif torch.cuda.is_available():  # the lab's servers\n"
            "    device = torch.device('cuda')  # fastest\n"
            "else:\n    # laptops\n    device = torch.device('cpu')\n",
            "from cudalint.device import pick_device\n\n"
            "# the lab's servers\n# fastest\n# laptops\ndevice = pick_device()\n",
        ),
        Invalid(
            "import torch\n\n# pick a device\nif torch.cuda.is_available():\n"
            "    device = torch.device('cuda')\nelse:\n    device = torch.device('cpu')\n",
            "from cudalint.device import pick_device\n\n"
            "# pick a device\ndevice = pick_device()\n",
        ),
        Invalid("device = 'cuda' if args.cuda and torch.cuda.is_available() else 'cpu'\n"),
        Invalid("device = 'cuda' if use_cuda else 'cpu'\n"),
        Invalid("device = 'cuda' if args.cuda else 'cpu'\n"),
        Invalid(
            "import torch\ndevice = 'cpu' if not torch.cuda.is_available() else 'cuda'\n",
            "from cudalint.device import pick_device\n\ndevice = str(pick_device())\n",
        ),
        Invalid(
            "import torch\nif not torch.cuda.is_available():\n    dev = torch.device('cpu')\n"
            "else:\n    dev = torch.device('cuda:0')\n",
            "from cudalint.device import pick_device\n\ndev = pick_device(0)\n",
        ),
        Invalid(
            "def pick():\n    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "    return device\n\ndef other():\n    if torch.backends.mps.is_available():\n"
            "        return 'mps'\n",
            "from cudalint.device import pick_device\n\n"
            "def pick():\n    device = str(pick_device())\n"
            "    return device\n\ndef other():\n    if torch.backends.mps.is_available():\n"
            "        return 'mps'\n",
        ),
        Invalid(
            "import torch\n\ndef configure():\n"
            "    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "    if torch.backends.mps.is_available():\n        amp_dtype = torch.bfloat16\n",
            "import torch\nfrom cudalint.device import pick_device\n\ndef configure():\n"
            "    device = str(pick_device())\n"
            "    if torch.backends.mps.is_available():\n        amp_dtype = torch.bfloat16\n",
        ),
    )

    @classmethod
    def prefilter(cls, settings: Settings) -> Terms:
        """A choice holds a CUDA device string (`cuda_device_expr`): the word `cuda`, or an
        escape that may spell it (`"\\x63uda"`) beside a test naming no `cuda`
        (`is_available` imported, `use_cuda`). Not `is_available` alone: `dist.is_available()`
        chooses no device. A choice at module level is not reported where the module probes
        for MPS (`_considers_mps`, anywhere in it): a function doing so counts too."""
        return Terms(words=cls.words, together=(
            (LETTER_ESCAPE.pattern, _TESTS),
            (word("mps"), "|".join(word(name) for name in ("is_available", "is_built"))),
        ))

    def __init__(self, ctx: PythonContext) -> None:
        super().__init__(ctx)
        self._scopes: dict[int, tuple[bool, frozenset[str]]] = {}
        self._names_mps: bool | None = None  # whether the file may name MPS at all

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node)

    def visit_If(self, node: cst.If) -> None:
        self._check(node)

    def _check(self, node: cst.IfExp | cst.If) -> None:
        choice = choice_of(self.ctx, node)
        if choice is None or in_prose(self.ctx) or self._considers_mps(choice):
            return
        self.report(node, fix=self._fix(choice))

    def _considers_mps(self, choice: Choice) -> bool:
        """The enclosing function gives the chosen name (or what it returns) an MPS branch,
        or checks for MPS at all where the choice goes to no name; at module level, the
        module checks for MPS anywhere (a helper of its own may probe for it)."""
        scope = next((n for n in self.ctx.ancestors() if isinstance(n, cst.FunctionDef)),
                     None)
        probes, branched = self._mps_facts(scope or self.ctx.module)
        key = _chosen_for(self.ctx, choice)
        if key is None:
            return probes
        return key in branched or (scope is None and probes)

    def _mps_facts(self, scope: cst.CSTNode) -> tuple[bool, frozenset[str]]:
        """Whether `scope` probes for MPS, and the targets it gives an MPS branch (`_RETURNED`
        for its return value): read once per scope, however many choices it holds."""
        cache = self._scopes
        if id(scope) not in cache and not self._may_name_mps():
            cache[id(scope)] = (False, frozenset())  # without reading the scope: a whole module
        if id(scope) not in cache:
            cache[id(scope)] = _mps_branches(self.ctx, scope)
        return cache[id(scope)]

    def _may_name_mps(self) -> bool:
        if self._names_mps is None:
            # to probe for MPS (an import of it) or hold an `"mps"` literal, a file spells the
            # word, or holds an escape that may write one of its letters (`"\x6dps"`)
            self._names_mps = may_spell(self.ctx.code, "mps")
        return self._names_mps

    def _fix(self, choice: Choice) -> NodeFix | None:
        if not choice.exact_probe or not self.ctx.helper_available("pick_device"):
            return None
        node = choice.node
        if isinstance(node, cst.If):
            assert choice.target is not None
            value = device_replacement(self.ctx, choice.cuda.index, as_device=choice.as_device)
            line = cst.SimpleStatementLine(
                body=[cst.Assign(targets=[choice.target], value=value)],
                leading_lines=[*node.leading_lines, *_comment_lines(node)],
            )
            message = replace_message(self.ctx.module, line.body[0])
            return NodeFix(node, line, message, helpers=("pick_device",))
        outer = _enclosing_torch_device(self.ctx, node)
        as_device = choice.as_device or outer is not None
        value = device_replacement(self.ctx, choice.cuda.index, as_device=as_device)
        target = outer if outer is not None else node
        return NodeFix(target, value, replace_message(self.ctx.module, value),
                       helpers=("pick_device",))


def _chosen_for(ctx: PythonContext, choice: Choice) -> str | None:
    """What the choice is made for: the target it is assigned to (through `torch.device(...)`),
    as written (`self.device` is not `device`), or `_RETURNED` where its function returns it."""
    if choice.target is not None:
        return ctx.module.code_for_node(choice.target.target)
    for ancestor in ctx.ancestors()[:3]:
        if isinstance(ancestor, cst.Assign) and len(ancestor.targets) == 1:
            return ctx.module.code_for_node(ancestor.targets[0].target)
        if isinstance(ancestor, cst.AnnAssign):
            return ctx.module.code_for_node(ancestor.target)
        if isinstance(ancestor, cst.Return):
            return _RETURNED
    return None


def _mps_branches(ctx: PythonContext, scope: cst.CSTNode) -> tuple[bool, frozenset[str]]:
    """Whether `scope` probes for MPS, and what it gives an MPS branch: the targets of an
    `"mps"` value or of a value that checks for MPS (`"mps" if torch.backends.mps.is_available()
    else device`), and whatever an `if` checking for MPS (`elif`s included) assigns or
    returns, directly or through a name holding the check (`use_mps = ...is_available()`).
    A check whose branch binds something else (`amp_dtype`) or only logs gives none."""
    code = ctx.module.code_for_node

    def probes(node: cst.CSTNode) -> bool:
        return any(isinstance(call, cst.Call) and ctx.call_name(call) in _MPS_PROBES
                   for call in find_all(node, (cst.Call,)))

    bindings = [(node, value) for node in find_all(scope, _BINDINGS)
                if (value := getattr(node, "value", None)) is not None]
    if not probes(scope):  # only an `"mps"` value can give a branch
        return False, frozenset(key for node, value in bindings if _is_mps(value)
                                for key in _keys(code, node))
    branched, holders = set[str](), set[str]()
    for node, value in bindings:
        probing = probes(value)
        if probing or _is_mps(value):
            branched.update(_keys(code, node))
        if probing:
            holders.update(_keys(code, node))

    def checks(test: cst.BaseExpression) -> bool:
        if probes(test):
            return True
        return bool(holders) and any(
            code(name) in holders for name in find_all(test, (cst.Name, cst.Attribute)))

    for node in find_all(scope, (cst.If,)):
        if isinstance(node, cst.If) and checks(node.test):
            branched.update(key for bound in find_all(node, _BINDINGS)
                            for key in _keys(code, bound))
    return True, frozenset(branched)


def _keys(code: Callable[[cst.CSTNode], str], node: cst.CSTNode) -> list[str]:
    """What an assignment binds (each target as written), or `_RETURNED` for a return."""
    if isinstance(node, cst.Assign):
        return [code(target.target) for target in node.targets]
    if isinstance(node, cst.AnnAssign):
        return [code(node.target)]
    return [_RETURNED]


def _is_mps(value: cst.BaseExpression | None) -> bool:
    """`"mps"` or `torch.device("mps")`."""
    if isinstance(value, cst.Call) and value.args:
        value = value.args[0].value
    return isinstance(value, cst.SimpleString) and value.evaluated_value == "mps"


def _comment_lines(node: cst.If) -> list[cst.EmptyLine]:
    """The comments inside the if/else, as lines above the statement that replaces it."""
    found: list[cst.Comment] = []

    class _Comments(cst.CSTVisitor):
        def visit_Comment(self, comment: cst.Comment) -> None:
            found.append(comment)

    visiting.visit(node.with_changes(leading_lines=()), _Comments())
    return [cst.EmptyLine(comment=cst.Comment(c.value)) for c in found]


def _enclosing_torch_device(ctx: PythonContext, node: cst.IfExp) -> cst.Call | None:
    """`torch.device(<choice>)`: the call the choice is the only argument of."""
    arg, call = ctx.parent(1), ctx.parent(2)
    if isinstance(arg, cst.Arg) and isinstance(call, cst.Call) and len(call.args) == 1 \
            and makes_torch_device(ctx, call):
        return call
    return None

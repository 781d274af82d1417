"""Which branches only run on a CUDA machine (or only when an optional import worked).

A finding inside such a branch is *guarded*: its severity is lowered one step, never hidden.
A guard is an availability check (`torch.cuda.is_available()`, `x.is_cuda`,
`device.type == "cuda"`, `torch.distributed.is_nccl_available()`, a variable holding one of
these, a pytest CUDA marker or `skipif` on the test), never a user's own switch
(`args.use_cuda`, `cfg.cuda`, a parameter named `use_cuda`, `cuda` or `gpu`): its default may
well be on.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from cudalint import data

if TYPE_CHECKING:
    from typing import Protocol

    class PythonContext(Protocol):
        """What the guards ask of the walk's context (cudalint.engine.walk.context, which uses
        them): names resolved through import aliases, the probes kept in variables, and the
        marks pytest gives a module's or a class's tests."""

        def qualname(self, expr: cst.BaseExpression) -> str | None: ...

        def call_name(self, node: cst.Call) -> str | None: ...

        def holds_probe(self, expr: cst.Name | cst.Attribute) -> bool | None: ...

        def assigned_values(self, expr: cst.Name | cst.Attribute
                            ) -> list[cst.BaseExpression] | None: ...

        @property
        def module(self) -> cst.Module: ...

        def pytestmark(self, owner: cst.Module | cst.ClassDef
                       ) -> list[cst.BaseExpression] | None: ...

# torch.cuda.is_available, device_count, ...: the `probe = true` entries of torch_cuda_api.toml
_PROBES = frozenset(
    name for name, entry in data.load("torch_cuda_api.toml")["api"].items() if entry.get("probe")
) | frozenset({
    # NCCL is built only into CUDA builds of torch: False on a Mac and a CPU-only wheel.
    "torch.distributed.is_nccl_available",
    "torch.distributed.distributed_c10d.is_nccl_available",
})
_CUDA_HOME = "torch.utils.cpp_extension.CUDA_HOME"
# Values that are set only in a CUDA build of torch (or with the CUDA toolkit): their
# truthiness is a probe (`if CUDA_HOME and os.path.isdir(...)`).
_BUILD_PROBES = frozenset({"torch.version.cuda", _CUDA_HOME})
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})
# Calls that end the program or skip the test: an `if` without CUDA ending in one is an
# early exit, which guards the rest of its block.
_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit", "pytest.exit"})
_SKIPS = frozenset({"pytest.skip", "pytest.importorskip"})
_SKIP_DECORATORS = frozenset({"pytest.mark.skipif", "unittest.skipIf"})
_SKIP_UNLESS = frozenset({"unittest.skipUnless"})
# A pytest marker or decorator named for CUDA: `@pytest.mark.requires_cuda`, `@requires_gpu`,
# `@cuda_only` (not `@no_cuda`, `@cpu_only`).
_CUDA_MARKER = re.compile(
    r"^(?:(?:requires?|needs?|only|skip_?if_?no|skip_?unless|with)_?(?:cuda|gpus?)"
    r"|(?:cuda|gpus?)(?:_?(?:only|required|test|tests))?)$", re.IGNORECASE)
_MAX_MARKER_DEPTH = 4
# The only node types whose children branch_guard can find guarded.
BRANCHING: frozenset[type[cst.CSTNode]] = frozenset({
    cst.If, cst.IfExp, cst.Try, cst.TryStar, cst.BooleanOperation, cst.FunctionDef,
    cst.ClassDef})
# The node types whose decorators may say that their body only runs with CUDA.
DECORATED: frozenset[type[cst.CSTNode]] = frozenset({cst.FunctionDef, cst.ClassDef})
# Names that hold a device: DEVICE, device, device_type, dev, self.device, args.device.
_DEVICE_NAME = re.compile(r"(^|_)(device|dev)(_|$)", re.IGNORECASE)


def names_a_device(name: str) -> bool:
    return bool(_DEVICE_NAME.search(name))


def is_cuda_string(expr: cst.BaseExpression) -> bool:
    """`"cuda"` or `"cuda:<n>"` as a plain string literal."""
    if not isinstance(expr, cst.SimpleString):
        return False
    value = expr.evaluated_value
    return isinstance(value, str) and (value == "cuda" or value.startswith("cuda:"))


def is_device(expr: cst.BaseExpression) -> bool:
    """`x.device`, `device.type`, `args.device`, `dev`, `str(device)`: an expression that
    holds a device (or its type), as opposed to a kernel or backend name."""
    if isinstance(expr, cst.Name):
        return names_a_device(expr.value)
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "type" or names_a_device(expr.attr.value)
    if isinstance(expr, cst.Call) and _is_name(expr.func, "str") and expr.args:
        return is_device(expr.args[0].value)
    return False


def _is_name(expr: cst.BaseExpression, name: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == name


def is_cuda_comparison(expr: cst.BaseExpression) -> bool:
    """`device == "cuda"`, `x.device.type == "cuda"`, `"cuda" in args.device`,
    `device.startswith("cuda")`: a device tested against CUDA (`impl == "cuda"` is not)."""
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        target = expr.comparisons[0]
        if not isinstance(target.operator, (cst.Equal, cst.In)):
            return False
        left, right = expr.left, target.comparator
        return (is_cuda_string(left) and is_device(right)) or \
            (is_cuda_string(right) and is_device(left))
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value == "startswith":
        return bool(expr.args) and is_cuda_string(expr.args[0].value) \
            and is_device(expr.func.value)
    return False


def is_cuda_probe(ctx: PythonContext, expr: cst.BaseExpression, *,
                  switches: bool = False) -> bool:
    """True when `expr` is true only where CUDA is available or in use. With `switches`, a
    user's CUDA switch (a parameter `use_cuda`, `USE_CUDA`, `Cuda`) counts too: it guards
    nothing (its default may be on), but a program that refuses to run without it requires
    CUDA (CUD112)."""
    compared = against_bool(expr)
    if compared is not None:  # `x.is_cuda == True`, `torch.cuda.is_available() is False`
        inner, positive = compared
        return (is_cuda_probe(ctx, inner, switches=switches) if positive
                else is_cuda_absence(ctx, inner, switches=switches))
    if isinstance(expr, cst.BooleanOperation):
        left = is_cuda_probe(ctx, expr.left, switches=switches)
        right = is_cuda_probe(ctx, expr.right, switches=switches)
        return (left or right) if isinstance(expr.operator, cst.And) else (left and right)
    if isinstance(expr, cst.Call):
        return ctx.call_name(expr) in _PROBES
    if isinstance(expr, cst.Comparison) and isinstance(expr.left, cst.Call):
        # torch.cuda.device_count() > 0
        return ctx.call_name(expr.left) in _PROBES
    if _tests_cuda_home(ctx, expr, cst.IsNot):
        return True
    if isinstance(expr, cst.Attribute) and expr.attr.value == "is_cuda":
        return True
    if isinstance(expr, (cst.Name, cst.Attribute)):
        return _holds_probe(ctx, expr, switches)
    return is_cuda_comparison(expr)


def _holds_probe(ctx: PythonContext, expr: cst.Name | cst.Attribute, switches: bool) -> bool:
    if ctx.qualname(expr) in _BUILD_PROBES:
        return True
    held = ctx.holds_probe(expr)
    if held is not None:
        return held
    # A parameter or global never assigned here: trusted by a name that says CUDA is there
    # (`has_cuda`, `cuda_available`), but never a user's switch (a parameter `use_cuda`,
    # `cuda` or `gpu`, an option `args.use_cuda`, `cfg.cuda`), whose default may well be on,
    # unless `switches` asks for them.
    names = names_cuda_flag if switches else names_cuda_availability
    return isinstance(expr, cst.Name) and names(expr.value)


# What a flag's name starts with when it says that CUDA is in use (in any case).
CUDA_FLAGS = ("use_cuda", "has_cuda", "cuda_avail")
# ... and when it says that CUDA is there, rather than that the user wants it.
CUDA_AVAILABILITY = ("has_cuda", "cuda_avail")


def names_cuda_availability(name: str) -> bool:
    """`has_cuda`, `HAS_CUDA`, `cuda_available`: a flag that says CUDA is there."""
    return name.lower().startswith(CUDA_AVAILABILITY)


def names_cuda_flag(name: str) -> bool:
    """`use_cuda`, `has_cuda`, `cuda_available`: a flag that says CUDA is in use."""
    lowered = name.lower()
    return lowered == "cuda" or lowered.startswith(CUDA_FLAGS)


def is_cuda_absence(ctx: PythonContext, expr: cst.BaseExpression, *,
                    switches: bool = False) -> bool:
    """True when `expr` is true wherever CUDA is missing (so false only with CUDA):
    `not torch.cuda.is_available()`, `not has_gpu`, `CUDA_HOME is None`,
    `x.is_cuda == False`, `not torch.cuda.is_available() or not flash` (`switches`: as in
    is_cuda_probe)."""
    inner = _negated(expr)
    if inner is not None:
        return is_cuda_probe(ctx, inner, switches=switches)
    compared = against_bool(expr)
    if compared is not None:
        inner, positive = compared
        return (is_cuda_absence(ctx, inner, switches=switches) if positive
                else is_cuda_probe(ctx, inner, switches=switches))
    if isinstance(expr, cst.BooleanOperation):
        left = is_cuda_absence(ctx, expr.left, switches=switches)
        right = is_cuda_absence(ctx, expr.right, switches=switches)
        return (left or right) if isinstance(expr.operator, cst.Or) else (left and right)
    return _tests_cuda_home(ctx, expr, cst.Is)


def against_bool(expr: cst.BaseExpression) -> tuple[cst.BaseExpression, bool] | None:
    """`x == True`, `x is True`, `x != False` -> (x, True); `x == False`, `x is False`,
    `x is not True` -> (x, False); None for anything else."""
    if not isinstance(expr, cst.Comparison) or len(expr.comparisons) != 1:
        return None
    target = expr.comparisons[0]
    value = target.comparator
    if not (isinstance(value, cst.Name) and value.value in ("True", "False")):
        return None
    if isinstance(target.operator, (cst.Equal, cst.Is)):
        same = True
    elif isinstance(target.operator, (cst.NotEqual, cst.IsNot)):
        same = False
    else:
        return None
    return expr.left, same == (value.value == "True")


def _tests_cuda_home(ctx: PythonContext, expr: cst.BaseExpression,
                     operator: type[cst.BaseCompOp]) -> bool:
    """`CUDA_HOME is None` (operator Is) / `CUDA_HOME is not None` (IsNot), the toolkit of
    torch.utils.cpp_extension."""
    if not isinstance(expr, cst.Comparison) or len(expr.comparisons) != 1:
        return False
    target = expr.comparisons[0]
    return type(target.operator) is operator and _is_name(target.comparator, "None") \
        and ctx.qualname(expr.left) == _CUDA_HOME


def _negated(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return expr.expression
    return None


def is_main_check(expr: cst.BaseExpression) -> bool:
    """`if __name__ == "__main__":`"""
    if not (isinstance(expr, cst.Comparison) and isinstance(expr.left, cst.Name)
            and expr.left.value == "__name__" and len(expr.comparisons) == 1):
        return False
    target = expr.comparisons[0]
    return isinstance(target.operator, cst.Equal) \
        and isinstance(target.comparator, cst.SimpleString)


def catches_import_error(node: cst.Try | cst.TryStar,
                         ctx: PythonContext | None = None) -> bool:
    """A handler of `ImportError` falls back; with `ctx`, one that only raises again (or
    stops the program) makes the import required, and is no guard."""
    for handler in node.handlers:
        kind = handler.type
        names: list[cst.BaseExpression] = []
        if isinstance(kind, cst.Tuple):
            names = [element.value for element in kind.elements]
        elif kind is not None:
            names = [kind]
        if any(isinstance(n, cst.Name) and n.value in _IMPORT_ERRORS for n in names) and (
                ctx is None or not stops_program(ctx, last_statement(handler.body))):
            return True
    return False


def branch_guard(ctx: PythonContext, node: cst.CSTNode, attribute: str) -> bool:
    """Whether the child `attribute` of `node` runs only under CUDA (or a working import)."""
    if isinstance(node, (cst.If, cst.IfExp)) and attribute in ("body", "orelse"):
        if attribute == "body":
            return is_cuda_probe(ctx, node.test)
        return is_cuda_absence(ctx, node.test)
    if isinstance(node, (cst.Try, cst.TryStar)) and attribute == "body":
        return catches_import_error(node, ctx)
    if attribute == "right" and isinstance(node, cst.BooleanOperation):
        # `torch.cuda.is_available() and <right>`, `not x.is_cuda or <right>`
        if isinstance(node.operator, cst.And):
            return is_cuda_probe(ctx, node.left)
        return is_cuda_absence(ctx, node.left)
    if attribute == "body" and isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return marked_cuda_only(ctx, node)
    return False


def marked_cuda_only(ctx: PythonContext, node: cst.FunctionDef | cst.ClassDef) -> bool:
    """A test (or test class) that only runs with CUDA, by its decorators:
    `@pytest.mark.skipif(not torch.cuda.is_available(), ...)`, `@unittest.skipIf(...)`,
    `@unittest.skipUnless(torch.cuda.is_available(), ...)`, `@pytest.mark.requires_cuda`, or
    the project's own marker (`requires_gpu = pytest.mark.skipif(...)` then `@requires_gpu`,
    or one imported under such a name); or by the `pytestmark` of its module or class, which
    pytest gives every test there. A module's marks guard its functions and classes (its
    tests, and the fixtures and helpers that run only for them), not its top-level
    statements, which run at import even when every test is skipped."""
    if any(_skips_without_cuda(ctx, d.decorator, 0) for d in node.decorators):
        return True
    owners: tuple[cst.Module | cst.ClassDef, ...] = (ctx.module, node) \
        if isinstance(node, cst.ClassDef) else (ctx.module,)
    return any(_marks_cuda_only(ctx, ctx.pytestmark(owner)) for owner in owners)


def _marks_cuda_only(ctx: PythonContext, values: list[cst.BaseExpression] | None) -> bool:
    """`pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), ...)`, or a list of
    marks one of which skips without CUDA, in every assignment of it."""
    return bool(values) and all(
        any(_skips_without_cuda(ctx, mark, 0) for mark in _marks(value))
        for value in values or ())


def _marks(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`[pytest.mark.gpu, pytest.mark.skipif(...)]` -> its marks; a single mark -> itself."""
    if isinstance(value, (cst.List, cst.Tuple)):
        return [element.value for element in value.elements]
    return [value]


def _skips_without_cuda(ctx: PythonContext, decorator: cst.BaseExpression, depth: int) -> bool:
    if isinstance(decorator, cst.Call):
        name = ctx.call_name(decorator) or ""
        condition = _condition(decorator)
        if name in _SKIP_DECORATORS:
            return condition is not None and is_cuda_absence(ctx, condition)
        if name in _SKIP_UNLESS:
            return condition is not None and is_cuda_probe(ctx, condition)
        # `@pytest.mark.requires_cuda()`, `@cuda_test(...)`
        return _names_cuda_marker(ctx, decorator.func)
    if not isinstance(decorator, (cst.Name, cst.Attribute)):
        return False
    values = ctx.assigned_values(decorator)
    if values and depth < _MAX_MARKER_DEPTH:  # `requires_gpu = pytest.mark.skipif(...)`
        return all(_skips_without_cuda(ctx, value, depth + 1) for value in values)
    return _names_cuda_marker(ctx, decorator)


def _condition(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if (arg.keyword is None and not arg.star) or \
                (arg.keyword is not None and arg.keyword.value == "condition"):
            return arg.value
    return None


def _names_cuda_marker(ctx: PythonContext, expr: cst.BaseExpression) -> bool:
    """`pytest.mark.requires_cuda`, `pytest.mark.gpu`, `requires_gpu`, `testing.cuda_only`."""
    name = ctx.qualname(expr) or ""
    if name.startswith("pytest.mark.") and name.count(".") == 2:
        return bool(_CUDA_MARKER.match(name.rpartition(".")[2]))
    last = name.rpartition(".")[2] or (expr.attr.value if isinstance(expr, cst.Attribute)
                                       else "")
    return bool(last) and not name.startswith("pytest.") and bool(_CUDA_MARKER.match(last)) \
        and last.lower() not in ("cuda", "gpu", "gpus")


def exits_without_cuda(ctx: PythonContext, statement: cst.CSTNode) -> bool:
    """`if not torch.cuda.is_available(): return` (or raise, continue, break, sys.exit(),
    pytest.skip()), or the `else:` of a CUDA check ending so: the statements after it in
    its block run only with CUDA."""
    if not isinstance(statement, cst.If):
        return False
    if is_cuda_absence(ctx, statement.test):
        return ends_program(ctx, statement.body)
    orelse = statement.orelse
    return isinstance(orelse, cst.Else) and is_cuda_probe(ctx, statement.test) \
        and ends_program(ctx, orelse.body)


def ends_program(ctx: PythonContext, suite: cst.BaseSuite) -> bool:
    """The block leaves its function or loop, skips the test, or stops the program, as its
    last step."""
    last = last_statement(suite)
    if isinstance(last, (cst.Return, cst.Continue, cst.Break)) or stops_program(ctx, last):
        return True
    call = last.value if isinstance(last, cst.Expr) else None
    if not isinstance(call, cst.Call):
        return False
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "skipTest":
        return True
    return ctx.call_name(call) in _SKIPS


def stops_program(ctx: PythonContext, statement: cst.CSTNode | None) -> bool:
    """`raise ...`, `sys.exit(...)`, `exit()`, `quit()`, `os._exit(...)`."""
    if isinstance(statement, cst.Raise):
        return True
    call = statement.value if isinstance(statement, cst.Expr) else None
    return isinstance(call, cst.Call) and ctx.call_name(call) in _EXITS


def last_statement(suite: cst.BaseSuite) -> cst.BaseSmallStatement | None:
    """The last simple statement of a block, if the block ends with one."""
    if isinstance(suite, cst.SimpleStatementSuite):
        return suite.body[-1] if suite.body else None
    if isinstance(suite, cst.IndentedBlock) and suite.body:
        line = suite.body[-1]
        if isinstance(line, cst.SimpleStatementLine) and line.body:
            return line.body[-1]
    return None

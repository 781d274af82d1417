"""CUD601's view of a function's callers: which calls in the module pass a float64 numpy array
(numpy's default) to one of its parameters, the array kept on `self`
(`self.betas = np.array(betas, dtype=np.float64)`, and what is derived from it), made in the
calling function, or joined by `np.stack`; and, read the same way, whether an array a method
reads from `self` (`torch.from_numpy(self.rew[idx]).to(device)`) is float64.

Read from the whole text of the module with Python's `ast` (`ctx.code`), not from the tree the
walk reads: the first pass leaves a caller (or an `__init__` assigning `self.rew`) naming none
of the rule's terms unread (cudalint.engine.first_pass.sparse), and the answer must not depend
on it. Asked only where a function moves a parameter, or an array on `self`, to a device with
`torch.from_numpy(...)`, which is rare.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import lru_cache

from cudalint.rules.cud6_mps.dtypes import Float64Table, table

_MAX_DEPTH = 8
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Caller:
    """A call passing a float64 array: the calling function's name, the argument's text and row."""

    function: str
    argument: str
    row: int


def float64_callers(code: str, function: str, parameter: str) -> list[Caller]:
    """The calls of the module-level `function` in `code` passing a float64 array as its
    `parameter`, in the order of the text; none where `code` does not parse."""
    reader = _read(code)
    if reader is None:
        return []
    definition = next((n for n in reader.module.body if isinstance(n, _FUNCTIONS)
                       and n.name == function), None)
    if definition is None:
        return []
    position = _position(definition, parameter)
    found: list[Caller] = []
    for scope, owner in reader.functions():
        for call in ast.walk(scope):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    and call.func.id == function):
                continue
            argument = _argument(call, parameter, position)
            if argument is not None and reader.float64(argument, scope, owner, 0):
                found.append(Caller(scope.name, ast.unparse(argument), argument.lineno))
    return found


def float64_in_method(code: str, owner: str, method: str, expression: str) -> bool:
    """Whether `expression` (its text), read in `method` of the module-level class `owner`
    in `code`, is a float64 array as a caller's argument is read: `self.rew`,
    `self.rew[idx]`, `np.stack(self.frames)`, where a method of the class assigns
    `self.rew` one (any of its assignments); False where either does not parse."""
    reader = _read(code)
    if reader is None:
        return False
    try:
        expr = ast.parse(f"(\n{expression}\n)", mode="eval").body
    except (SyntaxError, ValueError):
        return False
    return any(reader.float64(expr, scope, cls, 0) for scope, cls in reader.functions()
               if cls is not None and cls.name == owner and scope.name == method)


@lru_cache(maxsize=2)  # the functions of one module ask in turn
def _read(code: str) -> _Module | None:
    try:
        return _Module(ast.parse(code))
    except (SyntaxError, ValueError):
        return None


def _position(definition: Function, parameter: str) -> int | None:
    positional = [*definition.args.posonlyargs, *definition.args.args]
    return next((i for i, arg in enumerate(positional) if arg.arg == parameter), None)


def _argument(call: ast.Call, parameter: str, position: int | None) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == parameter:
            return keyword.value
    if position is None or position >= len(call.args) \
            or any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        return None
    return call.args[position]


@dataclass
class _Module:
    """The module's import aliases, and the values assigned to names and `self` attributes."""

    module: ast.Module
    aliases: dict[str, str] = field(default_factory=dict)
    table: Float64Table = field(default_factory=table)

    def __post_init__(self) -> None:
        for node in self.module.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.aliases[alias.asname or alias.name.partition(".")[0]] = \
                        alias.name if alias.asname else alias.name.partition(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def functions(self) -> list[tuple[Function, ast.ClassDef | None]]:
        """The module's functions and its classes' methods, each with its class."""
        found: list[tuple[Function, ast.ClassDef | None]] = []
        for node in self.module.body:
            if isinstance(node, _FUNCTIONS):
                found.append((node, None))
            elif isinstance(node, ast.ClassDef):
                found += [(n, node) for n in node.body if isinstance(n, _FUNCTIONS)]
        return found

    def name(self, expr: ast.expr) -> str | None:
        """`np.random.rand` -> "numpy.random.rand", through the module's imports."""
        if isinstance(expr, ast.Name):
            return self.aliases.get(expr.id, expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.name(expr.value)
            return None if base is None else f"{base}.{expr.attr}"
        return None

    def float64(self, expr: ast.expr, scope: ast.AST, owner: ast.ClassDef | None,
                depth: int) -> bool:
        """Whether `expr`, read in function `scope` (a method of `owner`), is a float64 array."""
        if depth > _MAX_DEPTH:
            return False
        deeper = depth + 1
        if isinstance(expr, ast.BinOp):
            return self.float64(expr.left, scope, owner, deeper) \
                or self.float64(expr.right, scope, owner, deeper)
        if isinstance(expr, ast.UnaryOp | ast.Subscript):
            inner = expr.operand if isinstance(expr, ast.UnaryOp) else expr.value
            return self.float64(inner, scope, owner, deeper)
        if isinstance(expr, ast.Name):
            return any(self.float64(v, scope, owner, deeper) for v in self.assigned(scope, expr.id))
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) \
                and expr.value.id == "self" and owner is not None:
            return any(self.float64(value, method, owner, deeper)
                       for method, value in _self_assigned(owner, expr.attr))
        if isinstance(expr, ast.Call):
            return self._call(expr, scope, owner, deeper)
        return False

    def _call(self, call: ast.Call, scope: ast.AST, owner: ast.ClassDef | None,
              depth: int) -> bool:
        name = self.name(call.func) or ""
        dtype = next((k.value for k in call.keywords if k.arg == "dtype"), None)
        first = call.args[0] if call.args else None
        if name in self.table.constructors:
            return dtype is None or self._float64_dtype(dtype)
        if name in self.table.from_data or name in self.table.joining:
            if dtype is not None:
                return self._float64_dtype(dtype)
            return first is not None and self._holds(first, scope, owner, depth)
        if name in self.table.keeping_functions:
            return first is not None and self.float64(first, scope, owner, depth)
        if not isinstance(call.func, ast.Attribute):
            return False
        if call.func.attr == "astype":
            wanted = first or dtype
            return wanted is not None and self._float64_dtype(wanted)
        return call.func.attr in self.table.keeping_methods \
            and self.float64(call.func.value, scope, owner, depth)

    def _holds(self, expr: ast.expr, scope: ast.AST, owner: ast.ClassDef | None,
               depth: int) -> bool:
        """A sequence with a float literal or a float64 array in it (`np.array`, `np.stack`)."""
        if isinstance(expr, ast.Constant):
            return isinstance(expr.value, float)
        if isinstance(expr, ast.List | ast.Tuple):
            return any(self._holds(e, scope, owner, depth + 1) for e in expr.elts)
        if isinstance(expr, ast.ListComp | ast.GeneratorExp):
            return self._holds(expr.elt, scope, owner, depth + 1)
        if isinstance(expr, ast.Name):
            return any(self._holds(v, scope, owner, depth + 1)
                       for v in self.assigned(scope, expr.id))
        return self.float64(expr, scope, owner, depth + 1)

    def assigned(self, scope: ast.AST, name: str) -> list[ast.expr]:
        """The values assigned to `name` by a plain assignment in function `scope`, else at
        the module's top level."""
        return _assigned(scope, name) or _assigned(self.module, name, top_level=True)

    def _float64_dtype(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Constant):
            return expr.value in self.table.numpy_float64_strings
        return self.name(expr) in self.table.numpy_float64


def _assigned(scope: ast.AST, name: str, *, top_level: bool = False) -> list[ast.expr]:
    """The values assigned to `name` by a plain assignment in `scope` (`top_level`: in the
    module's own statements only)."""
    nodes = scope.body if top_level and isinstance(scope, ast.Module) else ast.walk(scope)
    return [node.value for node in nodes if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)]


def _self_assigned(owner: ast.ClassDef, attribute: str
                   ) -> list[tuple[Function, ast.expr]]:
    """The values assigned to `self.<attribute>` in the methods of `owner`, with each method."""
    found = []
    for method in owner.body:
        if not isinstance(method, _FUNCTIONS):
            continue
        for node in ast.walk(method):
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Attribute) and t.attr == attribute
                    and isinstance(t.value, ast.Name) and t.value.id == "self"
                    for t in node.targets):
                found.append((method, node.value))
    return found

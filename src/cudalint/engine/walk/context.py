"""What a Python rule knows while it visits a node: aliases, guards, scope, helper names.

The engine resolves import aliases itself (`import torch as th`, `from torch import cuda as tc`)
instead of using LibCST's QualifiedNameProvider, which costs about ten times the parse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import libcst as cst

from cudalint.engine.first_pass.sparse import Hidden
from cudalint.engine.report import Report
from cudalint.engine.settings import INLINE_MODULE, Settings
from cudalint.engine.walk import guards, scopes
from cudalint.engine.walk.bindings import bound_names

T = TypeVar("T")


@dataclass
class PythonContext:
    module: cst.Module
    settings: Settings = field(default_factory=Settings)
    path: Path | None = None  # the file being checked (resolves relative imports)
    # The functions LibCST did not read (cudalint.engine.first_pass.sparse), and the file's whole
    # text.
    hidden: Hidden = field(default_factory=Hidden)
    text: str | None = None
    reports: list[Report] = field(default_factory=list)
    # local name -> qualified name; None for names bound by relative (first-party) imports
    aliases: dict[str, str | None] = field(default_factory=dict)
    stack: list[cst.CSTNode] = field(default_factory=list)
    _guards: list[bool] = field(default_factory=list)
    # conditional expressions whose branch being visited only runs with CUDA
    _cuda_branches: list[cst.CSTNode] = field(default_factory=list)
    # tests (and test classes) entered that a CUDA marker or skipif says only run with CUDA
    _cuda_tests: list[cst.CSTNode] = field(default_factory=list)
    # statements entered that follow an early exit without CUDA (guards.exits_without_cuda)
    _after_exits: list[cst.CSTNode] = field(default_factory=list)
    _exit_blocks: dict[int, tuple[cst.CSTNode, frozenset[int]]] = field(default_factory=dict)
    _probes: dict[tuple[int, str], bool] = field(default_factory=dict)
    _scope_assignments: dict[int, tuple[cst.CSTNode, dict[str, list[cst.BaseExpression]]]] = \
        field(default_factory=dict)
    _shared: dict[str, tuple[cst.CSTNode, object]] = field(default_factory=dict)
    # What the rules of one walk keep together, by name (a record all of them read, kept
    # once: cudalint.rules.assignments); each walk starts with none.
    walk_records: dict[str, object] = field(default_factory=dict)
    _bare: dict[str, bool] = field(default_factory=dict)  # _spelled_bare's answers
    _names_pytestmark: bool | None = None  # whether the file's text holds "pytestmark"
    # call_name's last answer: the rules visiting a Call ask in turn (an import forgets it)
    _last_call: tuple[cst.Call, str | None] | None = None
    _function_depth: int = 0
    _main_block_depth: int = 0
    _inline: frozenset[str] | None = None

    def __post_init__(self) -> None:
        self.top_level_names = _top_level_bindings(self.module) | self.hidden.top_level_names

    @property
    def code(self) -> str:
        """The whole file's text, the functions LibCST did not read included."""
        return self.text if self.text is not None else self.module.code

    # -- names ---------------------------------------------------------------------------
    def qualname(self, expr: cst.BaseExpression) -> str | None:
        """`th.cuda.synchronize` -> "torch.cuda.synchronize", through import aliases."""
        if isinstance(expr, cst.Name):
            if expr.value in self.aliases:
                return self.aliases[expr.value]
            return expr.value
        if isinstance(expr, cst.Attribute):
            base = self.qualname(expr.value)
            return None if base is None else f"{base}.{expr.attr.value}"
        return None

    def imports_root(self, expr: cst.BaseExpression) -> bool:
        """The leftmost name of `expr` (`np` in `np.linalg.eig`) is one an import binds."""
        root = root_name(expr)
        return root is not None and root.value in self.aliases

    def call_name(self, node: cst.Call) -> str | None:
        last = self._last_call
        if last is not None and last[0] is node:
            return last[1]
        name = self.qualname(node.func)
        self._last_call = (node, name)
        return name

    def local_name(self, qualified: str) -> str | None:
        """The name this module binds to `qualified` (a module or object), if any."""
        for local, target in self.aliases.items():
            if target == qualified:
                return local
        return None

    def torch_attr(self, dotted: str) -> tuple[cst.BaseExpression, tuple[str, ...]]:
        """An expression for `torch.<dotted>` and the imports it needs (`import torch`)."""
        local = self.local_name("torch")
        if local is None and "torch" not in self.aliases and "torch" not in self.top_level_names:
            return cst.parse_expression(f"torch.{dotted}"), ("torch",)
        return cst.parse_expression(f"{local or 'torch'}.{dotted}"), ()

    def helper_available(self, name: str) -> bool:
        """False when the module, or a function around the node being visited (a parameter,
        a local variable), binds `name` to something other than the helper, so a fix calling
        it would call the wrong function."""
        if self.bound_locally(name):
            return False
        target = self.aliases.get(name, "")
        if target == f"{self.settings.helper_module}.{name}":
            return True
        if self.settings.helper_module == INLINE_MODULE and name in self.inline_helpers:
            return True
        return name not in self.aliases and name not in self.top_level_names

    @property
    def inline_helpers(self) -> frozenset[str]:
        """The names the file's inline device helper defines (cudalint.runtime.helper)."""
        if self._inline is None:
            from cudalint.runtime.helper import inline_defined

            self._inline = inline_defined(self.code)
        return self._inline

    def bound_locally(self, name: str) -> bool:
        """A function around the node being visited binds `name` (parameter, local)."""
        if not self._spelled_bare(name):
            return False
        return any(name in bound_names(scope) for scope in self.stack
                   if type(scope) is cst.FunctionDef)

    def _spelled_bare(self, name: str) -> bool:
        """Whether the file's text spells `name` other than after a dot: no function binds a
        name it spells only as an attribute (`torch.cuda.synchronize`), and walking each
        function around a fix to collect its names cost a third of the rules' time on a file
        with a fix in most functions."""
        known = self._bare.get(name)
        if known is None:
            known = self._bare[name] = _spells_bare(self.code, name)
        return known

    def helper_call(self, name: str, args: Sequence[cst.Arg] = ()) -> cst.Call:
        return cst.Call(func=cst.Name(name), args=list(args))

    def shared(self, key: str, node: cst.CSTNode, compute: Callable[[], T]) -> T:
        """A fact about `node` that several rules need, computed once: the rules visiting a
        node run one after the other, so remembering the last node per key is enough."""
        cached = self._shared.get(key)
        if cached is not None and cached[0] is node:
            return cached[1]  # type: ignore[return-value]
        value = compute()
        self._shared[key] = (node, value)
        return value

    # -- where we are ----------------------------------------------------------------------
    def is_guarded(self) -> bool:
        """Inside `if torch.cuda.is_available():`, `if x.is_cuda:`, `try/except ImportError`,
        or after `if not torch.cuda.is_available(): return` in the same block."""
        return bool(self._after_exits) or any(self._guards)

    def in_cuda_only_branch(self) -> bool:
        """Inside the branch of a conditional expression that only runs with CUDA
        (`x.cuda() if torch.cuda.is_available() else x`): the line already does the right
        thing elsewhere, so no fix rewrites it."""
        return bool(self._cuda_branches)

    def in_cuda_test(self) -> bool:
        """Inside a test that exists to check CUDA (`@pytest.mark.requires_cuda`,
        `@pytest.mark.skipif(not torch.cuda.is_available(), ...)`, a project's `@requires_gpu`):
        no safe fix rewrites it."""
        return bool(self._cuda_tests)

    def assigned_values(self, expr: cst.Name | cst.Attribute) -> list[cst.BaseExpression] | None:
        """Every value assigned to `expr` in the scope that assigns it (as `holds_probe`
        reads them); None when nothing assigns it there (a parameter, an imported name)."""
        key = scopes.target_key(expr)
        scope = None if key is None else self._assigning_scope(expr, key)
        if key is None or scope is None:
            return None
        return self._assignments(scope).get(key) or None

    def pytestmark(self, owner: cst.Module | cst.ClassDef) -> list[cst.BaseExpression] | None:
        """Every value the module (outside its functions and classes) or the class assigns to
        `pytestmark`, the marks pytest gives each test there; None when it assigns none."""
        if self._names_pytestmark is None:
            self._names_pytestmark = "pytestmark" in self.code
        if not self._names_pytestmark:
            return None
        return self._assignments(owner).get("pytestmark") or None

    def holds_probe(self, expr: cst.Name | cst.Attribute) -> bool | None:
        """`has_gpu` after `has_gpu = torch.cuda.is_available()` in the enclosing function
        (else at module level), `self.use_cuda` after `self.use_cuda = ...` in the class:
        every value assigned to it there is an availability check (or False/None).
        None when nothing assigns it there (a parameter, an option)."""
        key = scopes.target_key(expr)
        scope = None if key is None else self._assigning_scope(expr, key)
        if key is None or scope is None:
            return None
        values = self._assignments(scope).get(key)
        if not values:
            return None
        memo = (id(scope), key)
        if memo not in self._probes:
            self._probes[memo] = False  # `use_cuda = use_cuda and ...` must not recurse
            self._probes[memo] = any(guards.is_cuda_probe(self, v) for v in values) and all(
                guards.is_cuda_probe(self, v) or _is_off(v) for v in values)
        return self._probes[memo]

    def _assigning_scope(self, expr: cst.Name | cst.Attribute, key: str) -> cst.CSTNode | None:
        if isinstance(expr, cst.Attribute):
            if key.startswith("self."):
                return next((n for n in reversed(self.stack) if type(n) is cst.ClassDef), None)
            return None
        for node in reversed(self.stack):
            if type(node) is cst.FunctionDef and key in self._assignments(node):
                return node
        return self.module

    def _assignments(self, scope: cst.CSTNode) -> dict[str, list[cst.BaseExpression]]:
        cached = self._scope_assignments.get(id(scope))
        if cached is None or cached[0] is not scope:
            cached = (scope, scopes.assignments(scope))
            self._scope_assignments[id(scope)] = cached
        return cached[1]

    def at_import_time(self) -> bool:
        """True outside functions and outside `if __name__ == "__main__":`."""
        return self._function_depth == 0 and self._main_block_depth == 0

    def parent(self, levels: int = 1) -> cst.CSTNode | None:
        """The ancestor `levels` up from the node being visited."""
        index = len(self.stack) - 1 - levels
        return self.stack[index] if index >= 0 else None

    def ancestors(self) -> list[cst.CSTNode]:
        """Ancestors of the node being visited, nearest first."""
        return self.stack[-2::-1]

    # -- engine hooks ----------------------------------------------------------------------
    # These hooks run for every node and every child attribute of a module: they dispatch on
    # the exact node type, which is several times cheaper than isinstance on libcst's classes.
    def enter(self, node: cst.CSTNode) -> None:
        parent = self.stack[-1] if self.stack else self.module
        if type(parent) in _BLOCKS and id(node) in self._after_exit(parent):
            self._after_exits.append(node)
        self.stack.append(node)
        kind = type(node)
        if kind in _SCOPES:
            self._function_depth += 1
        elif kind is cst.Import:
            self._bind_import(node)  # type: ignore[arg-type]
        elif kind is cst.ImportFrom:
            self._bind_import_from(node)  # type: ignore[arg-type]

    def leave(self, node: cst.CSTNode) -> None:
        self.stack.pop()
        if self._after_exits and self._after_exits[-1] is node:
            self._after_exits.pop()
        if type(node) in _SCOPES:
            self._function_depth -= 1

    # The node types whose attributes the hooks below need to hear of (the engine's walk tells
    # them of no other: a hook per attribute of every node cost a tenth of the walk).
    ATTRIBUTES_OF = guards.BRANCHING

    def enter_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if type(node) not in guards.BRANCHING:
            return
        guarded = guards.branch_guard(self, node, attribute)
        self._guards.append(guarded)
        if guarded and type(node) is cst.IfExp:
            self._cuda_branches.append(node)
        elif guarded and type(node) in guards.DECORATED:
            self._cuda_tests.append(node)
        if attribute == "body" and type(node) is cst.If \
                and guards.is_main_check(node.test):  # type: ignore[attr-defined]
            self._main_block_depth += 1

    def leave_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if type(node) not in guards.BRANCHING:
            return
        self._guards.pop()
        if self._cuda_branches and self._cuda_branches[-1] is node:
            self._cuda_branches.pop()
        if self._cuda_tests and self._cuda_tests[-1] is node:
            self._cuda_tests.pop()
        if attribute == "body" and type(node) is cst.If \
                and guards.is_main_check(node.test):  # type: ignore[attr-defined]
            self._main_block_depth -= 1

    def _after_exit(self, block: cst.CSTNode) -> frozenset[int]:
        """The statements of `block` that follow an early exit without CUDA: computed from
        the whole block, so it holds whichever of its statements a walk visits."""
        cached = self._exit_blocks.get(id(block))
        if cached is not None and cached[0] is block:
            return cached[1]
        after: set[int] = set()
        exited = False
        for statement in getattr(block, "body", ()):
            if exited:
                after.add(id(statement))
            exited = exited or guards.exits_without_cuda(self, statement)
        result = frozenset(after)
        self._exit_blocks[id(block)] = (block, result)
        return result

    def _bind_import(self, node: cst.Import) -> None:
        self._last_call = None
        for alias in node.names:
            dotted = dotted_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = dotted
            else:
                head = dotted.split(".", 1)[0]
                self.aliases[head] = head

    def _bind_import_from(self, node: cst.ImportFrom) -> None:
        self._last_call = None
        if isinstance(node.names, cst.ImportStar):
            return
        relative = bool(node.relative)
        base = dotted_name(node.module) if node.module is not None else ""
        for alias in node.names:
            name = dotted_name(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = None if relative else f"{base}.{name}"


_SCOPES = frozenset({cst.FunctionDef, cst.Lambda})
_BLOCKS = frozenset({cst.Module, cst.IndentedBlock})


def _is_off(value: cst.BaseExpression) -> bool:
    """`False` or `None`: the default a probe variable starts from."""
    return isinstance(value, cst.Name) and value.value in ("False", "None")


def dotted_name(node: cst.BaseExpression | None) -> str:
    """`a.b.c` for a Name/Attribute chain (an import's module), "" for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted_name(node.value)}.{node.attr.value}"
    return ""


_BLANKS = " \t\f\r\n\\"  # what may stand between a dot and the attribute's name


def _spells_bare(code: str, name: str) -> bool:
    """Whether `code` holds `name` as a whole word not after a dot (`str.find`: a regex
    starting with `\\b` scans the text a character at a time)."""
    start = code.find(name)
    while start >= 0:
        end = start + len(name)
        alone = not _in_word(code, start - 1) and not _in_word(code, end)
        if alone and not _after_dot(code, start):
            return True
        start = code.find(name, end)
    return False


def _in_word(code: str, index: int) -> bool:
    return 0 <= index < len(code) and (code[index].isalnum() or code[index] == "_")


def _after_dot(code: str, start: int) -> bool:
    """Whether the name starting at `start` follows a dot (an attribute, not a name)."""
    index = start - 1
    while index >= 0 and code[index] in _BLANKS:
        index -= 1
    return index >= 0 and code[index] == "."


def _top_level_bindings(module: cst.Module) -> frozenset[str]:
    """Names the module's top-level statements define (defs, classes, simple assignments)."""
    names: set[str] = set()
    for statement in module.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            names.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    names.update(
                        t.target.value for t in small.targets if isinstance(t.target, cst.Name)
                    )
    return frozenset(names)


def root_name(expr: cst.BaseExpression) -> cst.Name | None:
    """The name an attribute chain starts from (`a` in `a.b.c`); None when it starts from
    anything else (a call, a subscript)."""
    while type(expr) is cst.Attribute:
        expr = expr.value  # type: ignore[attr-defined]
    return expr if type(expr) is cst.Name else None  # type: ignore[return-value]

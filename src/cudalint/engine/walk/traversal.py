"""The rules' walk: one traversal of a module calling every enabled rule's `visit_`/`leave_`
methods in turn (`walk`), noting where reports are (`Reported`, `Chain`) for positions.
The node walks it is made of are cudalint.engine.walk.visiting's."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.walk.visiting import _Callback, prunable, traverse

if TYPE_CHECKING:
    from cudalint.engine.contract import PythonRule
    from cudalint.engine.walk.context import PythonContext


_ASSIGNMENTS = frozenset({cst.Assign, cst.AnnAssign})
_TABLES = frozenset({cst.List, cst.Tuple, cst.Set, cst.Dict})
ENTRIES = (cst.Element, cst.DictElement)
_ENTRIES = frozenset(ENTRIES)
# Where reports are: `(i,)` the module's i-th statement, `(i, j)` the j-th statement of the
# body of a class that is the module's i-th (its methods, mostly).
Place = tuple[int, ...]
# The innermost statement of an indented block around a report, or the entry of a table a
# top-level statement assigns, and the way down to it: the index of the module's statement it
# is in, and the nodes from that statement down to it.
Chain = tuple[int, tuple[cst.CSTNode, ...]]


@dataclasses.dataclass
class Reported:
    """Where a walk's reports are: their places, and the innermost statements around them."""

    places: set[Place]
    chains: list[Chain]


def _members(module: cst.Module) -> dict[int, Place]:
    """The places of the statements in the bodies of the module's classes, by node id."""
    found: dict[int, Place] = {}
    for index, statement in enumerate(module.body):
        if isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
            found.update((id(m), (index, j)) for j, m in enumerate(statement.body.body))
    return found


_Callbacks = tuple[tuple[tuple[str, str], ...], ...]
_CALLBACKS: dict[type[PythonRule], _Callbacks] = {}


def _callbacks(kind: type[PythonRule]) -> _Callbacks:
    """(node type name, method name) of a rule class's `visit_<Type>` and `leave_<Type>`
    methods, in `dir` order: learned once per class (a run asks for each file)."""
    known = _CALLBACKS.get(kind)
    if known is None:
        names = dir(kind)
        known = _CALLBACKS[kind] = tuple(
            tuple((attr[len(prefix):], attr) for attr in names if attr.startswith(prefix))
            for prefix in ("visit_", "leave_"))
    return known


class _BatchedWalk:
    """Every enabled rule's `visit_<Type>`/`leave_<Type>`, as LibCST's visit_batched calls
    them, with the context's hooks around them."""

    def __init__(self, ctx: PythonContext, rules: Sequence[PythonRule],
                 skip: Collection[int]) -> None:
        self.ctx = ctx
        self.visits: dict[str, list[_Callback]] = defaultdict(list)
        self.leaves: dict[str, list[_Callback]] = defaultdict(list)
        for rule in rules:
            visits, leaves = _callbacks(type(rule))
            for kind, attr in visits:
                self.visits[kind].append(getattr(rule, attr))
            for kind, attr in leaves:
                self.leaves[kind].append(getattr(rule, attr))
        self.statements = {id(s): i for i, s in enumerate(ctx.module.body)}
        self.members = _members(ctx.module)
        self.skip = skip  # ids of the nodes not visited, nor their children
        self.reported: set[Place] = set()  # the places that reported something
        self.chains: dict[int, Chain] = {}  # by the id of the innermost statement
        self._skipping: cst.CSTNode | None = None
        self._reports_before = 0
        self._chained = 0  # the reports whose chain is noted

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.skip:
            self._skipping = node
            return False
        self.ctx.enter(node)
        if len(self.ctx.stack) == 4 and id(node) in self.members:
            self._note(self.members[id(node)][:1])  # the reports of its class's header
        for callback in self.visits.get(type(node).__name__, ()):
            callback(node)
        if len(self.ctx.reports) > self._chained:
            self._chain()
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if original_node is self._skipping:
            self._skipping = None
            return
        for callback in self.leaves.get(type(original_node).__name__, ()):
            callback(original_node)
        if len(self.ctx.reports) > self._chained:
            self._chain()
        self.ctx.leave(original_node)
        depth = len(self.ctx.stack)
        if depth == 1 and id(original_node) in self.statements:
            self._note((self.statements[id(original_node)],))
        elif depth == 3 and id(original_node) in self.members:
            self._note(self.members[id(original_node)])

    def _chain(self) -> None:
        """Note the innermost statement of an indented block around the node being visited,
        which holds the reports just made (most of them: a rule may report a node it met
        before, which the places then find)."""
        self._chained = len(self.ctx.reports)
        stack = self.ctx.stack
        for depth in range(len(stack) - 1, 2, -1):
            if type(stack[depth - 1]) is cst.IndentedBlock:
                index = self.statements.get(id(stack[1]))
                if index is not None:
                    self.chains.setdefault(id(stack[depth]), (index, tuple(stack[1:depth + 1])))
                return
        if len(stack) > 4 and type(stack[4]) in _ENTRIES and type(stack[3]) in _TABLES \
                and type(stack[2]) in _ASSIGNMENTS and getattr(stack[2], "value", None) is stack[3]:
            index = self.statements.get(id(stack[1]))
            if index is not None:  # an entry of a table a top-level statement assigns
                self.chains.setdefault(id(stack[4]), (index, tuple(stack[1:5])))

    def _note(self, place: Place) -> None:
        """`place` holds the reports made since the last place was noted."""
        if len(self.ctx.reports) > self._reports_before:
            self.reported.add(place)
            self._reports_before = len(self.ctx.reports)


def walk(
    ctx: PythonContext, rule_classes: Sequence[type[PythonRule]], skip: Collection[int] = ()
) -> Reported:
    """Run the rules over `ctx.module`, but not into the nodes whose ids are in `skip`; their
    reports land in `ctx.reports`. Returns where they are: the places (`Place`) that reported
    something (a top-level statement, or a statement of a top-level class's body), and the
    innermost statements of indented blocks around them (`Chain`)."""
    ctx.walk_records = {}
    rules = [rule_class(ctx) for rule_class in rule_classes]
    walker = _BatchedWalk(ctx, rules, skip)
    traverse(ctx.module, walker.on_visit, walker.on_leave, ctx.enter_attribute,
             ctx.leave_attribute, prunable([*walker.visits, *walker.leaves]),
             ctx.ATTRIBUTES_OF)
    ctx.walk_records = {}  # they refer to the rules, which refer to the context: a cycle
    return Reported(walker.reported, list(walker.chains.values()))

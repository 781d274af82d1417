"""Walks over LibCST trees that visit without rebuilding.

`CSTNode.visit` rebuilds every node it visits, even for a read-only CSTVisitor: most of a
check's time went there. These walks call the same callbacks in the same order (`on_visit`,
`on_visit_attribute`, ..., `on_leave`) and create nothing. Which attributes of a node type hold
its children, and in which order, is learned from LibCST itself, once per type: its own visit
of one node of that type is recorded (`_Shapes`).

Two thirds of a module's nodes are whitespace, comments and punctuation (`INERT`). A walk whose
callbacks name none of them (the rules' walk, most read-only visitors, `find_all` of other
kinds) does not descend into them at all.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from cudalint.engine.contract import PythonRule
    from cudalint.engine.walk.context import PythonContext

_Callback = Callable[[cst.CSTNode], object]
_AttributeCallback = Callable[[cst.CSTNode, str], None]


class _Recorder(cst.CSTVisitor):
    """Notes the attributes LibCST visits on one node, without descending into them."""

    def __init__(self, node: cst.CSTNode) -> None:
        super().__init__()
        self.node = node
        self.attributes: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return node is self.node

    def on_leave(self, original_node: cst.CSTNode) -> None:
        return None

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if node is self.node:
            self.attributes.append(attribute)


def _recorded(node: cst.CSTNode) -> tuple[str, ...]:
    recorder = _Recorder(node)
    node.visit(recorder)
    return tuple(recorder.attributes)


class _Shapes:
    """The child attributes of each node type, in LibCST's visiting order, learned from the
    first node of the type. LibCST visits an absent (None) attribute of most types
    (`on_visit_attribute` without a child) but not all (an f-string's `format_spec`): a node
    where an attribute is None says which. An attribute absent from the recorded node is
    `pending`: a node that has it is recorded afresh."""

    def __init__(self) -> None:
        self.known: dict[type[cst.CSTNode], tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.when_none: dict[tuple[type[cst.CSTNode], str], bool] = {}  # visited when None?
        self.settled: dict[type[cst.CSTNode], tuple[str, ...]] = {}  # those without pending

    def of(self, node: cst.CSTNode) -> tuple[str, ...]:
        entry = self.known.get(type(node))
        if entry is None:
            return self._learn(node)
        attributes, pending = entry
        if pending and any(getattr(node, name) is not None for name in pending):
            return self._learn(node)
        return attributes

    def visited_when_none(self, node: cst.CSTNode, attribute: str) -> bool:
        key = (type(node), attribute)
        visited = self.when_none.get(key)
        if visited is None:
            visited = self.when_none[key] = attribute in _recorded(node)
        return visited

    def _learn(self, node: cst.CSTNode) -> tuple[str, ...]:
        kind = type(node)
        attributes = _recorded(node)
        absent = tuple(f.name for f in dataclasses.fields(node)
                       if f.name not in attributes and getattr(node, f.name) is None)
        for name in absent:
            self.when_none[(kind, name)] = False
        entry = self.known.get(kind)
        if entry is None or set(attributes) > set(entry[0]):
            self._keep(kind, attributes, absent)
        elif set(attributes) <= set(entry[0]):
            # what is present here and was not visited holds no child (`conversion="r"`)
            self._keep(kind, entry[0], tuple(n for n in entry[1] if getattr(node, n) is None))
        return attributes

    def _keep(self, kind: type[cst.CSTNode], attributes: tuple[str, ...],
              pending: tuple[str, ...]) -> None:
        self.known[kind] = (attributes, pending)
        if not pending:
            self.settled[kind] = attributes


def _inert_types() -> frozenset[type[cst.CSTNode]]:
    """Whitespace, comments and single tokens: nodes that hold nothing but each other."""
    tokens = frozenset({cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp,
                        cst.BaseAugOp})
    found: set[type[cst.CSTNode]] = {
        cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.Newline, cst.TrailingWhitespace,
        cst.EmptyLine, cst.Comment, cst.Comma, cst.Dot, cst.Colon, cst.Semicolon,
        cst.AssignEqual, cst.ImportStar, cst.Asynchronous, cst.LeftParen, cst.RightParen,
        cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace,
    }
    # `__mro__`, not issubclass: these bases are ABCs, and 500 ABC checks cost 50 ms of start-up
    found.update(value for value in vars(cst).values()
                 if isinstance(value, type) and not tokens.isdisjoint(value.__mro__))
    return frozenset(found)


INERT = _inert_types()
_INERT_NAMES = frozenset(kind.__name__ for kind in INERT)
_NOTHING: frozenset[type[cst.CSTNode]] = frozenset()


def prunable(callback_names: Collection[str]) -> frozenset[type[cst.CSTNode]]:
    """The inert types a walk need not enter, given the node type names its callbacks name:
    all of them, unless it names one (a comment sits inside whitespace)."""
    return INERT if _INERT_NAMES.isdisjoint(callback_names) else _NOTHING


_SHAPES = _Shapes()
_SEQUENCES = (tuple, list)
_CHILDLESS = (type(None), cst.MaybeSentinel)  # the other values of a child attribute


def traverse(
    root: cst.CSTNode,
    on_visit: Callable[[cst.CSTNode], bool],
    on_leave: Callable[[cst.CSTNode], object],
    on_visit_attribute: _AttributeCallback,
    on_leave_attribute: _AttributeCallback,
    prune: Collection[type[cst.CSTNode]] = _NOTHING,
    attributes_of: Collection[type[cst.CSTNode]] | None = None,
) -> None:
    """Call the four callbacks exactly as `root.visit(visitor)` calls a CSTVisitor's, but
    not for the nodes of the `prune` types (nor inside them); with `attributes_of`, the
    attribute callbacks only for the attributes of nodes of those types."""
    settled, shape = _SHAPES.settled, _SHAPES.of
    visited_when_none = _SHAPES.visited_when_none

    def visit(node: cst.CSTNode) -> None:
        if on_visit(node):
            attributes = settled.get(type(node))
            told = attributes_of is None or type(node) in attributes_of
            for attribute in shape(node) if attributes is None else attributes:
                value = getattr(node, attribute)
                kind = type(value)
                if kind in _SEQUENCES:
                    kept = [c for c in value if type(c) not in prune] if prune else value
                    if prune and not kept:
                        continue  # nothing but inert nodes, or nothing
                    if told:
                        on_visit_attribute(node, attribute)
                    for child in kept:
                        visit(child)
                    if told:
                        on_leave_attribute(node, attribute)
                    continue
                if kind in prune or (value is None and not visited_when_none(node, attribute)):
                    continue
                if kind in _CHILDLESS:
                    if told:
                        on_visit_attribute(node, attribute)
                        on_leave_attribute(node, attribute)
                    continue
                if told:
                    on_visit_attribute(node, attribute)
                    visit(value)
                    on_leave_attribute(node, attribute)
                else:
                    visit(value)
        on_leave(node)

    try:
        visit(root)
    finally:
        # `visit` refers to itself through its closure: without this, each walk would leave
        # a cycle holding the callbacks' owners (the rules, their context, the whole tree)
        # for the cyclic garbage collector to find (cudalint.engine.running.collector).
        visit = _visited


def _visited(node: cst.CSTNode) -> None:
    """What `traverse`'s walk becomes once it is over."""


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """`node.visit(visitor)` for a read-only visitor, without rebuilding the tree (nor
    entering whitespace, unless the visitor has a method for some of it)."""
    traverse(node, visitor.on_visit, visitor.on_leave, visitor.on_visit_attribute,
             visitor.on_leave_attribute, _prunable_for(type(visitor)))


@functools.lru_cache(maxsize=256)  # classes defined in functions are new each call
def _prunable_for(kind: type[cst.CSTVisitor]) -> frozenset[type[cst.CSTNode]]:
    if any(getattr(kind, hook) is not getattr(cst.CSTVisitor, hook)
           for hook in ("on_visit", "on_leave")):
        return _NOTHING  # it may want every node
    return prunable([attr.split("_", 1)[1] for attr in dir(kind)
                     if attr.startswith(("visit_", "leave_"))])


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`node.children` (in source order), without rebuilding `node`."""
    found: list[cst.CSTNode] = []
    for attribute in _SHAPES.of(node):
        value = getattr(node, attribute)
        if type(value) in _SEQUENCES:
            found.extend(value)
        elif type(value) not in _CHILDLESS:
            found.append(value)
    return found


def find_all(node: cst.CSTNode, kinds: tuple[type[cst.CSTNode], ...]) -> Iterator[cst.CSTNode]:
    """`node` and its descendants of the given types, in source order, as `m.findall` finds
    them, without importing libcst.matchers (half a second at start-up)."""
    prune = prunable([kind.__name__ for kind in kinds])
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, kinds):
            yield current
        stack.extend(child for child in reversed(children(current))
                     if type(child) not in prune)


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

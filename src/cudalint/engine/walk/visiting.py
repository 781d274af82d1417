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
from collections.abc import Callable, Collection, Iterator

import libcst as cst

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

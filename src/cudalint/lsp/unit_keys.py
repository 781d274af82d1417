"""What the findings of a leaf unit (a top-level function, a method of a top-level class, a
class without methods) depend on beyond its own text, as a key: the language server keeps a
unit's findings under its text and this key (lsp/incremental.py).

The key is conservative: the module's statements outside every unit (imports, class headers,
class bodies, `if`/`try` blocks...) verbatim; the unit's place among them; and, of what other
units and module-level assignments do, what the rules can see from inside the unit: `name = ...`
of a name the unit mentions (rules follow a name to its value, module-wide for CUD6), the
`self.attr = ...` of its class's methods (guards read them), imports and `global` anywhere (the
engine's aliases run on in source order), the module's top-level names a fix may collide with,
and the words a rule looks for in the whole module. A comment, a blank line, a new module-level
`extra = ...` or a new function leaves the other units' keys as they were, except those of the
units naming `from_numpy`, which depend on the whole text (CUD601 reads their callers).
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import re
import unicodedata
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

_WORD = re.compile(r"\w+")
# Words a rule looks for anywhere in the module's code (CUD6 float64: "uses a device").
FILE_WORDS = (b"device", b"cuda", b"mps")
# A unit naming one of these depends on the whole module: CUD601 reads every call of a
# function moving `torch.from_numpy(<parameter>)` to a device, and what the methods of a class
# moving `torch.from_numpy(self.<array>)` keep there (cudalint.rules.cud6_mps.callers).
# (CUD106 reports `from torch.cuda.amp import X` where no unit uses X: a unit holding an import
# is walked at every check anyway, `Facts.reaching`; one that calls `torch.cuda.amp.X()` finds
# what it finds alone.)
WHOLE_MODULE_WORDS = (b"from_numpy",)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPE_STATEMENTS = (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)
_BLOCKS = ("body", "orelse", "finalbody")


class Unit(Protocol):
    """A leaf unit as the engine gives it (engine/first_pass/sparse.py): 1-based lines, its text."""

    @property
    def first(self) -> int: ...

    @property
    def last(self) -> int: ...

    @property
    def text(self) -> bytes: ...


@dataclass(frozen=True)
class Facts:
    """What a unit's text shows the rest of the module, read once per distinct text."""

    names: frozenset[str]  # every word in it (strings and comments too), as identifiers read
    assigns: tuple[tuple[str, bytes], ...]  # `name = ...` anywhere in it: (name, statement)
    attributes: tuple[tuple[str, bytes], ...]  # `self.attr = ...`: (attr, statement)
    imports: tuple[bytes, ...]  # its import, `global` and `nonlocal` statements
    # It must be walked whenever another unit is: an import or `global` (the module's aliases
    # and names), an MPS mention (a module-level device choice reads the whole module for one).
    reaching: bool


@dataclass(frozen=True)
class Layout:
    """A module cut into its leaf units and the statements outside them."""

    units: dict[int, tuple[ast.stmt, ast.ClassDef | None]]  # first line -> node, its class
    outside: list[tuple[int, bytes]]  # (first line, text) of each statement outside units
    assigns: list[tuple[int, frozenset[str], bytes]]  # module-level `name = ...` statements
    top_names: frozenset[str]  # what the module's top level binds (defs, classes, names)


def layout(lines: Sequence[bytes], tree: ast.Module) -> Layout:
    """Where the leaf units are (as engine/first_pass/sparse.units_of cuts them) and what lies
    outside."""
    found = Layout({}, [], [], frozenset(_top_names(tree)))
    for statement in tree.body:
        if isinstance(statement, _DEFS):
            found.units[_start(statement)] = (statement, None)
        elif isinstance(statement, ast.ClassDef):
            _cut_class(statement, lines, found)
        elif (targets := _plain_targets(statement)) is not None:
            found.assigns.append((statement.lineno, targets, _text(lines, statement)))
        else:
            found.outside.append((statement.lineno, _text(lines, statement)))
    return found


def _cut_class(node: ast.ClassDef, lines: Sequence[bytes], found: Layout) -> None:
    methods = [s for s in node.body if isinstance(s, _DEFS)]
    if not methods:
        found.units[_start(node)] = (node, None)
        return
    header_end = _start(node.body[0]) - 1
    found.outside.append((_start(node), b"\n".join(lines[_start(node) - 1:header_end])))
    for statement in node.body:
        if isinstance(statement, _DEFS):
            found.units[_start(statement)] = (statement, node)
        else:
            found.outside.append((statement.lineno, _text(lines, statement)))


def facts_of(node: ast.stmt, text: bytes, lines: Sequence[bytes]) -> Facts:
    assigns: list[tuple[str, bytes]] = []
    attributes: list[tuple[str, bytes]] = []
    imports: list[bytes] = []
    for child in statements(node):
        if isinstance(child, _SCOPE_STATEMENTS):
            imports.append(_text(lines, child))
        if isinstance(child, ast.Assign):
            for target in child.targets:
                if isinstance(target, ast.Name):
                    assigns.append((target.id, _text(lines, child)))
        if isinstance(child, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = child.targets if isinstance(child, ast.Assign) else [child.target]
            attributes.extend((t.attr, _text(lines, child)) for t in _attribute_targets(targets))
    names = words(text)
    return Facts(names, tuple(assigns), tuple(attributes), tuple(imports),
                 bool(imports) or "mps" in names)


def statements(node: ast.stmt) -> Iterable[ast.stmt]:
    """`node` and every statement in it, at any depth: what can assign, import or declare a
    name (no expression holds a statement), at a tenth of the cost of `ast.walk`."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for field in _BLOCKS:
            block = getattr(current, field, None)
            if isinstance(block, list):
                stack.extend(s for s in block if isinstance(s, ast.stmt))
        for part in (*getattr(current, "handlers", ()), *getattr(current, "cases", ())):
            stack.extend(part.body)


def words(text: bytes) -> frozenset[str]:
    """The identifier-like words of `text`, NFKC-normalized as the parser reads names."""
    found = _WORD.findall(text.decode("utf-8", errors="replace"))
    return frozenset(w if w.isascii() else unicodedata.normalize("NFKC", w) for w in found)


def _attribute_targets(targets: Iterable[ast.expr]) -> Iterable[ast.Attribute]:
    for target in targets:
        if isinstance(target, ast.Attribute):
            yield target
        elif isinstance(target, (ast.Tuple, ast.List)):
            yield from _attribute_targets(target.elts)


class Keys:
    """The key of each leaf unit of one version of a module. What several keys hold (the
    statements other units and the module level assign or import) is hashed once.

    `known` holds the keys of an earlier version: a key is a function of the module's
    tables (`signature`: the statements outside units, the assignments and imports in
    source order, the top-level names), the unit's text, its rank among those statements
    and its class's `self.attr = ...`; a unit alike in all four takes the key it had."""

    def __init__(self, found: Layout, facts: Mapping[int, Facts], data: bytes,
                 special: frozenset[str], known: Mapping[Hashable, bytes] | None = None,
                 ) -> None:
        self.layout, self.facts, self.special = found, facts, special
        outside = b"\0".join(text for _, text in found.outside)
        self._common = (_digest(outside), tuple(word in data for word in FILE_WORDS))
        self._whole = _digest(data)
        self._outside_lines = sorted(line for line, _ in found.outside)
        self._assigns = [(line, targets, _digest(text)) for line, targets, text in found.assigns]
        self._assigned: dict[str, list[bytes]] = {}
        self._attributes: dict[int, list[tuple[str, bytes]]] = {}  # by id of the class
        for first in sorted(facts):
            for name, statement in facts[first].assigns:
                self._assigned.setdefault(name, []).append(_digest(statement))
            owner = found.units[first][1]
            if owner is not None:
                self._attributes.setdefault(id(owner), []).extend(
                    (attr, _digest(text)) for attr, text in facts[first].attributes)
        self._imports = [(first, _digest(b"\0".join(facts[first].imports)))
                         for first in sorted(facts) if facts[first].imports]
        self._assign_lines = [line for line, _, _ in self._assigns]
        self._import_lines = [line for line, _ in self._imports]
        self.signature = _digest(repr((
            self._common, [(sorted(targets), text) for _, targets, text in self._assigns],
            sorted(self._assigned.items()), [text for _, text in self._imports],
            sorted(found.top_names))).encode())
        self._known = known or {}
        self.made: dict[Hashable, bytes] = {}  # this version's keys, for the next one's `known`

    def key(self, first: int, text: bytes) -> bytes:
        """The key of the unit starting at `first` whose text is `text`."""
        owner = self.layout.units[first][1]
        whole = self._whole if any(word in text for word in WHOLE_MODULE_WORDS) else None
        memo = (self.signature, text, whole, bisect.bisect_left(self._outside_lines, first),
                bisect.bisect_left(self._assign_lines, first),
                bisect.bisect_left(self._import_lines, first), first in self._import_lines,
                tuple(self._attributes.get(id(owner), ())) if owner is not None else None)
        key = self._known.get(memo)
        if key is None:
            key = self._key(first) if whole is None else _digest(whole + self._key(first))
        self.made[memo] = key
        return key

    def _key(self, first: int) -> bytes:
        owner = self.layout.units[first][1]
        names = self.facts[first].names | self.special
        parts = (
            self._common,
            bisect.bisect_left(self._outside_lines, first),  # statements outside above it
            [(line < first, text) for line, targets, text in self._assigns
             if not targets.isdisjoint(names)],
            sorted(text for name in names for text in self._assigned.get(name, ())),
            sorted(text for attr, text in self._attributes.get(id(owner), ()) if attr in names)
            if owner is not None else [],
            [(line < first, imports) for line, imports in self._imports if line != first],
            sorted(self.layout.top_names & names),
        )
        return _digest(repr(parts).encode())


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _start(node: ast.stmt) -> int:
    """A statement's first line, its decorators included."""
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno, *(d.lineno for d in decorators)])


def _end(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


def _text(lines: Sequence[bytes], node: ast.stmt) -> bytes:
    return b"\n".join(lines[node.lineno - 1:_end(node)])


def _plain_targets(statement: ast.stmt) -> frozenset[str] | None:
    """The names a module-level `name = ...` binds; None for any other statement."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    else:
        return None
    if not all(isinstance(t, ast.Name) for t in targets):
        return None
    return frozenset(t.id for t in targets if isinstance(t, ast.Name))


def _top_names(tree: ast.Module) -> Iterable[str]:
    for statement in tree.body:
        if isinstance(statement, (*_DEFS, ast.ClassDef)):
            yield statement.name
        elif (targets := _plain_targets(statement)) is not None:
            yield from targets

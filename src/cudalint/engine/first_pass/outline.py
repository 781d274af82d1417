"""The cheap first pass: `ast` (C speed) finds which functions LibCST need not read at all
(`blanked`, cudalint.engine.first_pass.sparse), where each top-level statement starts, and which
functions the LibCST traversal may skip when the whole file was parsed (`--fix` parses it whole).

A top-level function or class, or a method of a top-level class, is skipped when its text names
nothing the enabled rules look for: none of their keywords or words
(cudalint.engine.first_pass.prefilter) and no name bound by a relevant top-level statement (`from
torch.cuda import amp` makes `amp` worth a look, `DEVICE = "cuda"` makes `DEVICE` one). The module's
head (imports, docstring) and every other top-level statement a rule's flow may reach are visited,
so the rules still see the file's aliases and module-level values (`_idle_statements`). LibCST stays
the engine of record: it parses every relevant statement, and the rules visit LibCST nodes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import cached_property

import libcst as cst

from cudalint.engine.first_pass.lazy_ast import is_placeholder
from cudalint.engine.first_pass.prefilter import (
    BLOCK_FIELDS,
    PROBE_PATTERN,
    Follower,
    Prefilter,
    identifiers,
    statements_in,
    without_prose,
)
from cudalint.engine.first_pass.runs import Run, runs_of
from cudalint.engine.first_pass.sparse import Unit, first_line, units_of
from cudalint.engine.reading.ast_parse import parse_quietly
from cudalint.engine.reading.depth import HOLDING_NOTHING

_SKIPPABLE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Outline:
    # Per LibCST top-level statement: the line it starts on, its leading comments included.
    starts: tuple[int, ...]
    skip: frozenset[int]  # the ids of the LibCST functions and classes the traversal skips
    # Per LibCST top-level statement: its first statement as `ast` read it.
    nodes: tuple[ast.stmt, ...] = ()

    def member_starts(self, index: int, statement: cst.CSTNode) -> tuple[int, ...] | None:
        """Where each statement of the body of `statement`, the module's `index`-th (a
        class), starts; None when `ast` and LibCST do not read that body alike."""
        node = self.nodes[index] if index < len(self.nodes) else None
        block = getattr(statement, "body", None)
        if not isinstance(node, ast.ClassDef) or not isinstance(block, cst.IndentedBlock):
            return None
        pairs = _paired(node.body, block.body)
        if pairs is None:
            return None
        return tuple(first_line(group[0]) - _leading_lines(member) for member, group in pairs)

    def nested_start(self, index: int, chain: Sequence[cst.CSTNode],
                     default_indent: str) -> tuple[int, list[str]] | None:
        """Where the last statement of `chain` starts (its leading lines included) and the
        indentation of each block around it; `chain` runs from the module's `index`-th
        statement down to a statement of an indented block (cudalint.engine.walk.traversal.Chain).
        None where `ast` and LibCST do not read a block on the way alike."""
        node: ast.stmt | None = self.nodes[index] if index < len(self.nodes) else None
        statement, path = chain[0], list(chain[1:])
        indents: list[str] = []
        while path and node is not None:
            entered = _entered(statement, node, path)
            if entered is None:
                return None
            nodes, block, around, taken = entered
            member = path[taken] if taken < len(path) else None
            position = _position(block.body, member)
            pairs = _paired(nodes, block.body) if position is not None else None
            if pairs is None or position is None:
                return None
            indents.extend(default_indent if indent is None else indent for indent in around)
            statement, node, path = pairs[position][0], pairs[position][1][0], path[taken + 1:]
        if node is None:
            return None
        return first_line(node) - _leading_lines(statement), indents


_HANDLERS = (cst.ExceptHandler, cst.ExceptStarHandler)


def _entered(statement: cst.CSTNode, node: ast.stmt, path: list[cst.CSTNode],
             ) -> tuple[list[ast.stmt], cst.IndentedBlock, list[str | None], int] | None:
    """The block `path` enters from a compound statement (`statement` as LibCST reads it,
    `node` as `ast` does): its statements as `ast` reads them, the block, the indentation
    around it besides the block's own (a `match` indents its cases: None for the module's
    default), and how many nodes of `path` lead into it (`elif`,
    `else:`, `except:`, `finally:`, `case`, the block)."""
    step = path[0]
    kind = type(step)
    if kind is cst.If and step is getattr(statement, "orelse", None):  # an `elif`
        orelse = getattr(node, "orelse", None)
        if not isinstance(node, ast.If) or not orelse or len(orelse) != 1 \
                or not isinstance(orelse[0], ast.If):
            return None
        inner = _entered(step, orelse[0], path[1:])
        return None if inner is None else (*inner[:3], inner[3] + 1)
    indents: list[str | None] = []
    owner: cst.CSTNode = statement
    nodes = getattr(node, "body", None)
    taken = 0
    if kind is cst.Else and step is getattr(statement, "orelse", None):
        owner, nodes, taken = step, getattr(node, "orelse", None), 1
    elif kind is cst.Finally and step is getattr(statement, "finalbody", None):
        owner, nodes, taken = step, getattr(node, "finalbody", None), 1
    elif kind in _HANDLERS or kind is cst.MatchCase:
        field = "handlers" if kind in _HANDLERS else "cases"
        position = _position(getattr(statement, field, ()), step)
        found = getattr(node, field, None)
        if position is None or not found or len(found) != len(getattr(statement, field)):
            return None
        owner, nodes, taken = step, found[position].body, 1
        if isinstance(statement, cst.Match):
            indents.append(statement.indent)
    block = path[taken] if taken < len(path) else None
    if block is None or block is not getattr(owner, "body", None) or not isinstance(nodes, list) \
            or not isinstance(block, cst.IndentedBlock):
        return None
    return nodes, block, [*indents, block.indent], taken + 1


def _position(nodes: Sequence[cst.CSTNode], wanted: cst.CSTNode | None) -> int | None:
    """The index of `wanted` itself (not an equal node) in `nodes`."""
    return next((i for i, n in enumerate(nodes) if n is wanted), None)


@dataclass
class _Statement:
    node: cst.CSTNode | None  # None: the first pass before LibCST (`hidden_parts`)
    first: ast.stmt
    nodes: list[ast.stmt]
    text: bytes

    @cached_property
    def words(self) -> set[bytes]:
        """Found when first asked for: most placeholders never are (`_names`)."""
        return identifiers(self.text)


def outline(data: bytes, module: cst.Module, prefilter: Prefilter | None,
            tree: ast.Module | None = None) -> Outline | None:
    """None when `ast` does not read the file as LibCST does: then everything is visited.
    `tree`: the file as `ast` read it, when the caller has it already."""
    tree = tree or _parse(data)
    if tree is None:
        return None
    pairs = _paired(tree.body, module.body)
    if pairs is None:
        return None
    starts = tuple(first_line(group[0]) - _leading_lines(node) for node, group in pairs)
    nodes = tuple(group[0] for _, group in pairs)
    if prefilter is None:
        return Outline(starts, frozenset(), nodes)
    lines = data.splitlines(keepends=True)
    statements = _statements(pairs, lines)
    relevant, reach = _relevant(statements, prefilter, _named(statements, prefilter))
    skip: set[int] = set()
    for index, statement in enumerate(statements):
        if index not in relevant:
            if isinstance(statement.first, _SKIPPABLE):
                skip.add(id(statement.node))
        elif isinstance(statement.first, ast.ClassDef):
            skip.update(_idle_methods(statement, lines, prefilter, reach))
    return Outline(starts, frozenset(skip), nodes)


def stand_ins(module: cst.Module, first_pass: Outline, hidden: Collection[int]) -> set[int]:
    """The ids of the LibCST statements that stand in for the hidden units (their `ast` nodes'
    ids in `hidden`; cudalint.engine.first_pass.sparse.blank): top-level ones, and methods."""
    found: set[int] = set()
    for statement, node in zip(module.body, first_pass.nodes, strict=True):
        if id(node) in hidden:
            found.add(id(statement))
            continue
        block = getattr(statement, "body", None)
        if isinstance(node, ast.ClassDef) and isinstance(block, cst.IndentedBlock):
            pairs = _paired(node.body, block.body) or []
            found.update(id(member) for member, group in pairs if id(group[0]) in hidden)
    return found


def blanked(data: bytes, tree: ast.Module, prefilter: Prefilter,
            units: list[Unit] | None = None) -> list[Unit]:
    """The units that name nothing the enabled rules look for (cudalint.engine.first_pass.sparse):
    irrelevant top-level functions and classes, and the irrelevant methods of the others.
    `units`: the module's units (`units_of`), when the caller has them already."""
    parts = hidden_parts(data, tree, prefilter, units)
    return (units or units_of(data, tree)) if parts is None else parts[0]


def hidden_parts(data: bytes, tree: ast.Module, prefilter: Prefilter,
                 units: list[Unit] | None = None) -> tuple[list[Unit], list[Run]] | None:
    """The units LibCST need not read (`blanked`), and the runs of elements of the relevant
    tables it need not read (cudalint.engine.first_pass.runs); None where no top-level statement
    names a term of the rules (what guards are made of, at most): no rule can report anything
    there, so LibCST need read nothing."""
    lines = data.splitlines(keepends=True)
    statements = []
    for node in tree.body:
        text = b"".join(lines[first_line(node) - 1 : _last_line([node])])
        statements.append(_Statement(None, node, [node], text))
    named = _named(statements, prefilter)
    if not named:
        return None
    relevant, reach = _relevant(statements, prefilter, named)
    by_node = {id(unit.node): unit for unit in units or units_of(data, tree)}
    found: list[Unit] = []
    for index, statement in enumerate(statements):
        unit = by_node.get(id(statement.first))
        if unit is None:
            continue
        if index not in relevant:
            found.append(unit)
            continue
        found.extend(m for m in unit.methods
                     if not _looked_into(prefilter, m.text, m.node, m.first, m.words)
                     and not reach.reads(m.words, m.text, m.node, m.first))
    for index in _idle_statements(statements, relevant):
        statement = statements[index]
        found.append(Unit(first_line(statement.first), _last_line(statement.nodes),
                          statement.text, statement.first))
    followed = reach.names()
    runs = [run for index in sorted(relevant) if len(statements[index].nodes) == 1
            for run in runs_of(statements[index].first, lines, prefilter, followed)]
    return found, runs


def _idle_statements(statements: list[_Statement], relevant: set[int]) -> set[int]:
    """The top-level statements other than functions and classes that LibCST need not read:
    after the module's docstring and imports (where a fix puts its import), naming nothing
    the rules look for, alone on their lines, and outside every flow a rule may follow: they
    read no name that a relevant statement binds or changes (`kw.update(cuda_kw)`; the rules
    resolve names through module-level statements), and bind or change no name that the code
    LibCST reads names."""
    idle = {i for i in range(_header(statements) + 2, len(statements))
            if i not in relevant and not isinstance(statements[i].first, _SKIPPABLE)
            and _alone(statements, i)}
    if not idle:
        return idle
    modules = _imported(statements)
    binds: dict[int, set[bytes]] = {}

    def bound(index: int) -> set[bytes]:
        if index not in binds:
            binds[index] = _binds(statements[index].first, modules)
        return binds[index]

    flowing: set[bytes] = set()  # what relevant statements, and those they flow into, bind
    read: set[bytes] = set()  # the words of what LibCST reads
    for index, statement in enumerate(statements):
        if index in relevant and not isinstance(statement.first, _SKIPPABLE):
            flowing |= bound(index)
        if index not in idle and (index in relevant
                                  or not isinstance(statement.first, _SKIPPABLE)):
            read |= statement.words
    while idle:
        fed = {i for i in idle if not flowing.isdisjoint(statements[i].words)}
        needed = fed | {i for i in idle - fed if not statements[i].words.isdisjoint(read)
                        and not bound(i).isdisjoint(read)}
        if not needed:
            break
        idle -= needed
        for index in needed:
            read |= statements[index].words
        for index in fed:
            flowing |= bound(index)
    return idle


def _header(statements: list[_Statement]) -> int:
    """The index of the last statement of the module's head: its imports (not a function's),
    and the docstring, dunder assignments and `pass` lines it starts with (where a fix inserts
    its import, whose layout also looks at the statement after the head)."""
    last_import = max((i for i, s in enumerate(statements)
                       if not isinstance(s.first, _SKIPPABLE) and b"import" in s.text
                       and _imports(s.first)), default=-1)
    lead = 0
    while lead < len(statements) and _opens_module(statements[lead].first, lead):
        lead += 1
    return max(last_import, lead - 1)


def _imports(node: ast.stmt) -> bool:
    return any(isinstance(inner, (ast.Import, ast.ImportFrom)) for inner in statements_in(node))


def _opens_module(node: ast.stmt, index: int) -> bool:
    """A docstring (the first statement), a dunder assignment, `pass` or an import."""
    if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return all(isinstance(t, ast.Name) and t.id.startswith("__") and t.id.endswith("__")
                   for t in targets)
    return isinstance(node, ast.Pass) or _imports(node)


def _alone(statements: list[_Statement], index: int) -> bool:
    """No other statement shares a line with the `index`-th (`a = 1; b = 2`)."""
    first, last = first_line(statements[index].first), _last_line(statements[index].nodes)
    before = index == 0 or _last_line(statements[index - 1].nodes) < first
    after = index + 1 == len(statements) or first_line(statements[index + 1].first) > last
    return before and after


def _binds(node: ast.stmt, modules: set[str]) -> set[bytes]:
    """Every name a statement binds or changes, at any depth: assigned, looped over, caught,
    defined, or changed through an attribute, an item or a method (`kw.update(...)`; not
    `os.getcwd()`, a call on an imported name)."""
    names: set[str] = set()
    changed: set[str] = set()
    for inner in _nodes(node):
        if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Load):
            names.add(inner.id)
        elif isinstance(inner, (ast.Attribute, ast.Subscript)) \
                and not isinstance(inner.ctx, ast.Load):
            changed.update(_base(inner))
        elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
            changed.update(_base(inner.func))
        elif isinstance(inner, (*_SKIPPABLE, ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
            name = getattr(inner, "name", None)
            if name:
                names.add(name)
        elif isinstance(inner, (ast.Global, ast.Nonlocal)):
            names.update(inner.names)
        elif isinstance(inner, ast.MatchMapping) and inner.rest:
            names.add(inner.rest)
    return {name.encode() for name in names | (changed - modules)}


def _nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node of the tree of `node`, each before those it holds (as `ast.walk`, in
    another order, and without walking into contexts and operators)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for name in current._fields:
            value = getattr(current, name, None)
            if isinstance(value, list):
                stack.extend(item for item in value
                             if isinstance(item, ast.AST) and not isinstance(item, HOLDING_NOTHING))
            elif isinstance(value, ast.AST) and not isinstance(value, HOLDING_NOTHING):
                stack.append(value)


def _imported(statements: list[_Statement]) -> set[str]:
    """The names the module's top-level code imports (`os` for `import os.path`)."""
    names: set[str] = set()
    for statement in statements:
        if isinstance(statement.first, _SKIPPABLE) or b"import" not in statement.text:
            continue
        for inner in statements_in(statement.first):
            if isinstance(inner, ast.Import):
                names.update(a.asname or a.name.split(".")[0] for a in inner.names)
            elif isinstance(inner, ast.ImportFrom):
                names.update(a.asname or a.name for a in inner.names)
    return names


def _base(node: ast.expr) -> list[str]:
    """The name an attribute or item chain starts from (`a` in `a.b[0].c`), if a name."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return [node.id] if isinstance(node, ast.Name) else []


def _statements(pairs: list[tuple[cst.CSTNode, list[ast.stmt]]], lines: list[bytes]
                ) -> list[_Statement]:
    """The ast statements of each LibCST statement (`_paired`), with their text."""
    statements = []
    for statement, group in pairs:
        text = b"".join(lines[first_line(group[0]) - 1 : _last_line(group)])
        statements.append(_Statement(statement, group[0], group, text))
    return statements


def _paired(nodes: list[ast.stmt], body: Sequence[cst.CSTNode]
            ) -> list[tuple[cst.CSTNode, list[ast.stmt]]] | None:
    """Each LibCST statement of a block with its ast statements (`a = 1; b = 2` is one
    line, two nodes); None when the two do not read the block alike."""
    pairs = []
    position = 0
    for statement in body:
        size = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        group = nodes[position : position + size]
        if len(group) != size:
            return None
        pairs.append((statement, group))
        position += size
    return pairs if position == len(nodes) else None


def _idle_methods(
    statement: _Statement, lines: list[bytes], prefilter: Prefilter, reach: _Reach
) -> set[int]:
    """The methods of a class worth visiting that name nothing the rules look for."""
    block = getattr(statement.node, "body", None)
    if not isinstance(block, cst.IndentedBlock) or not isinstance(statement.first, ast.ClassDef):
        return set()
    pairs = _paired(statement.first.body, block.body)
    if pairs is None:
        return set()
    members = _statements(pairs, lines)
    return {id(m.node) for m in members
            if isinstance(m.first, (ast.FunctionDef, ast.AsyncFunctionDef))
            and not _looked_into(prefilter, m.text, m.first, first_line(m.first), m.words)
            and not reach.reads_statement(m)}


def _parse(data: bytes) -> ast.Module | None:
    try:
        return parse_quietly(data)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _last_line(nodes: list[ast.stmt]) -> int:
    end = nodes[-1].end_lineno
    return end if end is not None else nodes[-1].lineno


def _leading_lines(statement: cst.CSTNode | None) -> int:
    """The comment and blank lines LibCST keeps in front of the statement's first token."""
    count = len(getattr(statement, "leading_lines", ()))
    decorators = getattr(statement, "decorators", ())
    if decorators:
        count += len(decorators[0].leading_lines)
    return count


class _Reach:
    """The names the rules follow from the relevant top-level statements into the functions
    that use them (triggers), per `Follower`: all of them (`bound`), and those a function
    may report through with nothing more (`loose`; `Follower.loose`)."""

    def __init__(self, followers: list[Follower]) -> None:
        self.followers = followers
        self.bound: list[set[bytes]] = [set() for _ in followers]
        self.loose: list[set[bytes]] = [set() for _ in followers]

    def reads(self, words: Collection[bytes], text: bytes, node: ast.stmt, first: int) -> bool:
        """A function or class (`text` from line `first`, `node` as `ast` read it) naming
        `words` names a name a rule follows, and what else that rule needs there."""
        code = None
        for follower, bound, loose in zip(self.followers, self.bound, self.loose, strict=True):
            if bound.isdisjoint(words):
                continue
            if not loose.isdisjoint(words):
                return True
            if code is None:
                code = without_prose(text, node, first)
            if follower.reaches(code):
                return True
        return False

    def names(self) -> set[bytes]:
        """Every name a rule follows."""
        return set().union(*self.bound)

    def within(self, other: _Reach) -> bool:
        """Every name this one follows, `other` follows alike."""
        pairs = zip([*self.bound, *self.loose], [*other.bound, *other.loose], strict=True)
        return all(names <= known for names, known in pairs)

    def reads_statement(self, statement: _Statement) -> bool:
        return self.reads(statement.words, statement.text, statement.first,
                          first_line(statement.first))


def _named(statements: list[_Statement], prefilter: Prefilter) -> set[int]:
    """The top-level statements naming a term of the rules (what a guard is made of does not
    count: it only makes a finding a guarded one)."""
    return {i for i, s in enumerate(statements) if _names(s, prefilter)}


def _relevant(statements: list[_Statement], prefilter: Prefilter,
              named: set[int]) -> tuple[set[int], _Reach]:
    """The top-level statements naming something the rules look for (those `named` names a
    term, and those naming a guard), and the names they bind where a rule follows them (a
    statement using one of those names is relevant too, a function or class where it names
    what that rule needs besides: `Terms.follow`): an import's aliases for every rule,
    assigned names for the rules that follow assignments (`Follower`)."""
    everything = set(range(len(statements)))
    relevant = named | {i for i in everything - named if _names(statements[i], _GUARDS)}
    followers = prefilter.followers()
    sites: dict[int, list[_Site]] = {}
    reach = _Reach(followers)
    while True:
        grown = _Reach(followers)
        for index in relevant:
            if index not in sites:
                sites[index] = _sites(statements[index])
            for site in sites[index]:
                _bind(site, reach, grown)
        found = grown.names()
        more = {i for i in everything - relevant if not found.isdisjoint(statements[i].words)
                and (not _is_unit(statements[i]) or grown.reads_statement(statements[i]))} \
            if found else set()
        if not more and grown.within(reach):
            return relevant, reach
        for known, names in zip(reach.bound, grown.bound, strict=True):
            known |= names
        for known, names in zip(reach.loose, grown.loose, strict=True):
            known |= names
        relevant |= more


def _bind(site: _Site, known: _Reach, grown: _Reach) -> None:
    """Add what `site` binds to `grown` for each follower whose terms, or whose names
    already `known`, it names."""
    for k, follower in enumerate(known.followers):
        if (site.imported or follower.assigned) and (
                not known.bound[k].isdisjoint(site.words) or site.named(follower.terms)):
            grown.bound[k] |= site.names
            if follower.loose(site.text):
                grown.loose[k] |= site.names


def _is_unit(statement: _Statement) -> bool:
    return isinstance(statement.first, _SKIPPABLE) and len(statement.nodes) == 1


def _names(statement: _Statement, terms: Prefilter) -> bool:
    """The statement names one of `terms` (the rules', or `_GUARDS`): a function or class by
    its code (cudalint.engine.first_pass.prefilter), any other statement by its text. A placeholder
    names nothing: the lazy read made it of a text naming neither a term nor a guard
    (`named`), this statement's text."""
    if is_placeholder(statement.first):
        return False
    if _is_unit(statement):
        return terms.matches_code(statement.text, statement.first, first_line(statement.first),
                                  statement.words)
    return terms.matches(statement.text, statement.words)


# What the guards around a finding are made of (cudalint.engine.walk.guards:
# `torch.cuda.is_available()`, `x.is_cuda`, `use_cuda`, `CUDA_HOME`, `device.type == "cuda"`,
# a module's `pytestmark`): code naming it is read whichever rules run, so that a finding keeps
# the guard it sits behind (`if not HAS_GPU: sys.exit()` after
# `HAS_GPU = torch.cuda.is_available()`, a method setting `self.use_cuda`,
# `pytestmark = pytest.mark.requires_gpu`), which the selected rules' own terms need not name.
_GUARDS = Prefilter((), words=frozenset({b"cuda", b"CUDA_HOME", b"pytestmark"}),
                    patterns=(PROBE_PATTERN.encode(),))


def named(prefilter: Prefilter) -> Callable[[bytes], bool]:
    """Whether a text names a term of `prefilter` or a guard: a function or class whose text
    does not is hidden whole, unread (cudalint.engine.first_pass.lazy_ast)."""
    def names(text: bytes) -> bool:
        words = identifiers(text)  # found once for both questions (most texts name neither)
        return prefilter.matches(text, words) or _GUARDS.matches(text, words)

    return names


def _looked_into(prefilter: Prefilter, text: bytes, node: ast.stmt, first: int,
                 words: AbstractSet[bytes]) -> bool:
    """A function's or method's code names a term of the rules, or a guard."""
    return prefilter.matches_code(text, node, first, words) \
        or _GUARDS.matches_code(text, node, first, words)


@dataclass(frozen=True)
class _Site:
    """A statement, a compound statement's header, or an import's alias, inside a top-level
    statement, and the names it binds where their uses need not spell out what they hold."""

    names: frozenset[bytes]
    text: bytes  # its lines; an alias's own import (`from torch import cuda as tc`)
    words: frozenset[bytes]  # the identifiers of its text
    imported: bool  # an import's alias: what it binds is what its text names
    # by the id of the terms asked about (a first pass's followers live as long as it)
    _named: dict[int, bool] = field(default_factory=dict, compare=False, repr=False)

    def named(self, terms: Prefilter) -> bool:
        """Its text names a term of a rule that follows names (`Prefilter.binds`)."""
        known = self._named.get(id(terms))
        if known is None:
            known = self._named[id(terms)] = terms.binds(self.text, self.words)
        return known


def _site(names: set[bytes], text: bytes, imported: bool = False) -> _Site:
    return _Site(frozenset(names), text, frozenset(identifiers(text)), imported)


def _sites(statement: _Statement) -> list[_Site]:
    """Where a relevant top-level statement binds names: a name bound inside a compound
    statement (`if TYPE_CHECKING:` importing ten names) is a trigger only where the statement
    binding it (an import's alias, an assignment, a loop's header) names a term or a
    trigger."""
    if len(statement.nodes) > 1 or not isinstance(statement.first, _COMPOUND):
        found = [site for node in statement.nodes for site in _aliases(node)]
        names = _stored([n for n in statement.nodes if not isinstance(n, _SKIPPABLE)])
        return [*found, _site(names, statement.text)] if names else found
    lines = statement.text.splitlines(keepends=True)
    top = first_line(statement.first)
    found = []
    for first, last, names, node in _binding_places(statement.first):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.extend(_aliases(node))
        else:
            found.append(_site(names, b"".join(lines[first - top : last - top + 1])))
    return found


def _aliases(node: ast.stmt) -> list[_Site]:
    """A site per alias an import binds, its text the import of that alias alone: what
    `from torch import cuda, nn` binds to `nn` names no `cuda`. `import a.b` binds no alias
    (its uses say `a.b` in full), nor does a relative import (cudalint.engine.walk.context
    resolves its names to nothing)."""
    if isinstance(node, ast.Import):
        return [_site({alias.asname.encode()},
                      f"import {alias.name} as {alias.asname}".encode(), imported=True)
                for alias in node.names if alias.asname]
    if not isinstance(node, ast.ImportFrom) or node.level:
        return []
    return [_site({(alias.asname or alias.name).encode()},
                  f"from {node.module} import {alias.name}"
                  f"{f' as {alias.asname}' if alias.asname else ''}".encode(), imported=True)
            for alias in node.names if alias.name != "*"]


_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,
             ast.TryStar, ast.Match)
_BLOCK_FIELDS = frozenset(BLOCK_FIELDS)
_IMPORTS = (ast.Import, ast.ImportFrom)


def _binding_places(node: ast.stmt) -> list[tuple[int, int, set[bytes], ast.AST]]:
    """(first line, last line, names, node) of each statement or compound header in `node`
    that binds names (an import's aliases are `_aliases`)."""
    found: list[tuple[int, int, set[bytes], ast.AST]] = []
    for inner in statements_in(node):
        if not isinstance(inner, (ast.stmt, ast.excepthandler)) or isinstance(inner, _SKIPPABLE):
            continue
        if isinstance(inner, _IMPORTS):
            found.append((inner.lineno, inner.end_lineno or inner.lineno, set(), inner))
            continue
        if not isinstance(inner, (*_COMPOUND, ast.excepthandler)):
            names = _stored([inner])
            if names:
                found.append((inner.lineno, inner.end_lineno or inner.lineno, names, inner))
            continue
        header = [value for name, value in ast.iter_fields(inner) if name not in _BLOCK_FIELDS]
        parts = [part for value in header
                 for part in (value if isinstance(value, list) else [value])
                 if isinstance(part, ast.AST)]
        names = _stored(parts)
        if isinstance(inner, ast.ExceptHandler) and inner.name:
            names.add(inner.name.encode())
        if names:
            last = max([inner.lineno, *(getattr(p, "end_lineno", 0) or 0 for p in parts)])
            found.append((inner.lineno, last, names, inner))
    return found


def _stored(parts: list[ast.AST]) -> set[bytes]:
    """The names stored in these expressions (a loop's target, `with ... as x`, a walrus),
    not a comprehension's own variables."""
    names: set[bytes] = set()
    local: set[int] = set()
    for part in parts:
        for inner in _nodes(part):
            if isinstance(inner, ast.comprehension):
                local.update(id(n) for n in _nodes(inner.target))
            elif isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store) \
                    and id(inner) not in local:
                names.add(inner.id.encode())
    return names

"""The imports a fix needs, and the imports its rewrite left unused, as line edits.

New imports go with the module's import block: after the docstring, `from __future__` imports
and module dunders (`__author__ = ...`), after the last import of the leading import block,
merged into an existing `from <helper> import ...`. An import (or one name of a `from`
import) is removed only when the fixes removed its last use. Only top-level, one-statement
import lines are touched; everything is computed from the module's top-level statements, with
no whole-module transform, and (for a check's edits, `Layout` with `starts`) without
generating the module's code: a name's uses are counted only in the statements that spell it.
"""

from __future__ import annotations

import bisect
import contextlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from cudalint.engine.first_pass.prefilter import LETTER_ESCAPE
from cudalint.engine.first_pass.sparse import text_lines
from cudalint.engine.settings import INLINE_MODULE
from cudalint.engine.walk import visiting
from cudalint.engine.walk.context import dotted_name
from cudalint.finding import Edit, Position
from cudalint.runtime.helper import INLINE_MARK, inline_block

# Past this length the helper import is written one name a line, as black and ruff format it.
LINE_LENGTH = 88


@dataclass(frozen=True)
class Needs:
    """Names from the helper module, and plain `import X` modules."""

    helpers: frozenset[str] = frozenset()
    modules: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.helpers or self.modules)

    def __or__(self, other: Needs) -> Needs:
        return Needs(self.helpers | other.helpers, self.modules | other.modules)


@dataclass(frozen=True)
class LineEdit:
    """Replace lines [start, end) (0-based) with `text`."""

    start: int
    end: int
    text: str

    def as_edit(self) -> Edit:
        return Edit(self.text, Position(self.start + 1, 1), Position(self.end + 1, 1))


@dataclass(frozen=True)
class _Statement:
    node: cst.BaseStatement
    first: int  # 0-based line of the statement itself (after its leading blank lines/comments)
    end: int  # 0-based line after its last line
    blank_before: bool  # a blank line separates it from the statement above


class Layout:
    """Where each top-level statement of a module sits, in lines. With `starts` (the line each
    statement starts on, its leading lines included: cudalint.engine.first_pass.outline) and `lines`
    (the module's text as `ast` splits it: cudalint.engine.first_pass.sparse.text_lines), no code is
    generated. Without them a statement's code is generated when a statement at or after it is asked
    for (`statement(index)`: the import block is near the top), and lines are counted as
    Python counts them (`text_lines`, as `apply` does: str.splitlines would end a line at a
    form feed, U+2028 or \\x1c in a comment)."""

    def __init__(self, module: cst.Module, starts: Sequence[int] | None = None,
                 lines: Sequence[str] | None = None) -> None:
        self.module = module
        self.newline = module.default_newline
        self.nodes = module.body
        self.lines: Sequence[str] | None = None  # None: lines counted in generated code
        self._placed: list[_Statement] = []  # the first statements, placed so far
        self._next_line = len(module.header)  # generating: the line after the last placed
        self._firsts: list[int] | None = None
        placed = _placed(module, starts, lines) if starts is not None and lines is not None \
            else None
        if placed is not None:
            self.lines, self._placed = lines, placed

    def statement(self, index: int) -> _Statement:
        while len(self._placed) <= index:
            node = self.nodes[len(self._placed)]
            count = _count_lines(self.module.code_for_node(node))
            self._placed.append(_Statement(node, self._next_line + len(node.leading_lines),
                                           self._next_line + count, _blank_before(node)))
            self._next_line += count
        return self._placed[index]

    @property
    def statements(self) -> list[_Statement]:
        """All of them."""
        if self.nodes:
            self.statement(len(self.nodes) - 1)
        return self._placed

    @property
    def line_count(self) -> int:
        """The line after the last statement (the footer's first)."""
        return self.statements[-1].end if self.nodes else len(self.module.header)

    @property
    def ends_with_newline(self) -> bool:
        if self.lines is None:
            return self.module.code.endswith(("\n", "\r"))
        # LibCST's code drops a last lone "\r": the text the edits apply to has it.
        return bool(self.lines) and self.lines[-1].endswith(("\n", "\r"))

    def index_at(self, line: int) -> int | None:
        """The index of the statement on `line` (0-based), if any."""
        if self._firsts is None:
            self._firsts = [statement.first for statement in self.statements]
        index = bisect.bisect_right(self._firsts, line) - 1
        if index < 0 or line >= self.statements[index].end:
            return None
        return index


def _placed(module: cst.Module, starts: Sequence[int], lines: Sequence[str],
            ) -> list[_Statement] | None:
    """The statements from where they start; None when `starts` does not fit the module."""
    if len(starts) != len(module.body):
        return None
    if not starts:
        return []
    line_count = len(lines) - len(module.footer)
    if starts[0] - 1 != len(module.header) or starts[-1] > line_count:
        return None
    ends = [*(start - 1 for start in starts[1:]), line_count]
    return [_Statement(node, start - 1 + len(node.leading_lines), end, _blank_before(node))
            for node, start, end in zip(module.body, starts, ends, strict=True)]


def _blank_before(statement: cst.SimpleStatementLine | cst.BaseCompoundStatement) -> bool:
    return any(not line.comment for line in statement.leading_lines)


def _count_lines(text: str) -> int:
    return len(text_lines(text)) if text else 0


# -- what a module imports ----------------------------------------------------------------------
def _import_of(statement: cst.BaseStatement) -> cst.Import | cst.ImportFrom | None:
    """The import of a one-import line, else None."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    node = statement.body[0]
    return node if isinstance(node, (cst.Import, cst.ImportFrom)) else None


def _is_header(statement: cst.BaseStatement, index: int) -> bool:
    """A docstring, a `from __future__` import or a dunder assignment."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    node = statement.body[0]
    if isinstance(node, cst.ImportFrom):
        return _is_future(node)
    if index == 0 and isinstance(node, cst.Expr) and isinstance(
            node.value, (cst.SimpleString, cst.ConcatenatedString)):
        return not _is_bytes(node.value)  # no docstring (nor a hidden unit's stand-in)
    if isinstance(node, (cst.Assign, cst.AnnAssign)):
        targets = node.targets if isinstance(node, cst.Assign) else [node]
        return all(isinstance(t.target, cst.Name) and _DUNDER.match(t.target.value)
                   for t in targets)
    return False


def _is_bytes(string: cst.SimpleString | cst.ConcatenatedString) -> bool:
    first = string.left if isinstance(string, cst.ConcatenatedString) else string
    return isinstance(first, cst.SimpleString) and "b" in first.prefix.lower()


_DUNDER = re.compile(r"^__\w+__$")


def _is_pass(statement: cst.BaseStatement) -> bool:
    """`pass`: what a notebook cell's magic (`!nvidia-smi`) is read as."""
    return isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 \
        and isinstance(statement.body[0], cst.Pass)


def _is_import_block_statement(statement: cst.BaseStatement) -> bool:
    """An import line (not `from __future__`), or `try:` importing (`try: import x` /
    `except ImportError:`)."""
    node = _import_of(statement)
    if node is not None:
        return not _is_future(node)
    if isinstance(statement, cst.Try):
        return all(isinstance(s, cst.BaseStatement) and _import_of(s) is not None
                   for s in statement.body.body)
    return False


def bound_by(node: cst.Import | cst.ImportFrom) -> list[tuple[str, cst.ImportAlias]]:
    """(local name, alias) for each name an import binds."""
    if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
        return []
    names = node.names if not isinstance(node.names, cst.ImportStar) else ()
    bound = []
    for alias in names:
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            bound.append((alias.asname.name.value, alias))
        elif isinstance(node, cst.Import):
            bound.append((dotted_name(alias.name).split(".", 1)[0], alias))
        else:
            bound.append((dotted_name(alias.name), alias))
    return bound


def _bindings(module: cst.Module) -> dict[str, str]:
    """Local name -> what it is, for the module's top-level imports ("torch", "m.name")."""
    bound: dict[str, str] = {}
    for statement in module.body:
        node = _import_of(statement)
        if node is None:
            continue
        base = dotted_name(node.module) if isinstance(node, cst.ImportFrom) else ""
        relative = isinstance(node, cst.ImportFrom) and bool(node.relative)
        for local, alias in bound_by(node):
            name = dotted_name(alias.name)
            if relative:
                bound[local] = ""
            elif isinstance(node, cst.ImportFrom):
                bound[local] = f"{base}.{name}"
            else:
                bound[local] = local if alias.asname is None else name
    return bound


def inline_defined(module: cst.Module) -> frozenset[str]:
    """The names the module's inline device helper defines: the top-level statements that end
    with its mark (cudalint.runtime.helper.INLINE_MARK)."""
    found: set[str] = set()
    for statement in module.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            header = statement.body.header if isinstance(statement.body, cst.IndentedBlock) \
                else None
            if header is not None and _marked(header.comment):
                found.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine) \
                and _marked(statement.trailing_whitespace.comment):
            for small in statement.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                        and isinstance(small.targets[0].target, cst.Name):
                    found.add(small.targets[0].target.value)
                elif isinstance(small, cst.Import):
                    found.update(local for local, _alias in bound_by(small))
    return frozenset(found)


def _marked(comment: cst.Comment | None) -> bool:
    return comment is not None and comment.value == INLINE_MARK


# -- adding -----------------------------------------------------------------------------------
def missing(module: cst.Module, needs: Needs, helper_module: str) -> Needs:
    """The part of `needs` the module does not import yet."""
    bound = _bindings(module)
    if helper_module == INLINE_MODULE:  # what the file's inline helper defines is there
        bound = {**{name: f"{INLINE_MODULE}.{name}" for name in inline_defined(module)},
                 **bound}
    helpers = frozenset(n for n in needs.helpers if bound.get(n) != f"{helper_module}.{n}")
    modules = frozenset(m for m in needs.modules if bound.get(m) != m)
    return Needs(helpers, modules)


def add_edits(layout: Layout, needs: Needs, helper_module: str) -> list[LineEdit]:
    """The line edits that import `needs` (already reduced to what is missing)."""
    if not needs:
        return []
    edits: list[LineEdit] = []
    helpers = set(needs.helpers)
    setup = after_path_setup(layout)  # the helper is imported where the project's code is
    if helper_module == INLINE_MODULE and helpers:
        block = inline_block(sorted(helpers), inline_defined(layout.module), layout.newline)
        edits.append(_insertion(layout, (layout.newline if layout.nodes else "") + block,
                                setup))
        helpers = set()
    existing = _existing_helper_import(layout, helper_module)
    if existing is not None and helpers:
        statement, node = existing
        names = [dotted_name(a.name) for a in node.names  # type: ignore[union-attr]
                 if a.asname is None]
        merged = sorted({*names, *helpers})
        if len(names) == len(node.names):  # type: ignore[arg-type]
            text = _from_import(helper_module, merged, layout.newline, setup is not None)
            edits.append(LineEdit(statement.first, statement.end, text))
            helpers = set()
    lines = [f"import {name}{layout.newline}" for name in sorted(needs.modules)]
    if helpers and setup is not None:
        edits.append(_insertion(layout, _from_import(helper_module, sorted(helpers),
                                                     layout.newline, True), setup))
    elif helpers:
        lines.append(_from_import(helper_module, sorted(helpers), layout.newline))
    if lines:
        edits.append(_insertion(layout, "".join(lines)))
    return edits


# A statement that changes the import path: `sys.path.append(str(ROOT))`, `if ... not in
# sys.path: sys.path.insert(0, ...)`, `site.addsitedir(...)`.
_PATH_SETUP = re.compile(r"\bsys\s*\.\s*path\b|\bsite\s*\.\s*addsitedir\b")
_MAIN_GUARD = re.compile(r"\s*if\s+__name__\s*==")
_DEFINITION = re.compile(r"\s*(?:@|def\s|async\s+def\s|class\s)")
_IMPORT_LINE = re.compile(r"\s*(?:import|from)\s")


def after_path_setup(layout: Layout) -> int | None:
    """Where the helper's import goes in a module that puts folders on `sys.path` itself
    before importing the project's modules (`sys.path.append(str(ROOT))`, then
    `from utils.general import ...`): the index of the statement it follows, the last import
    of the block after the last such set-up (the set-up itself where no import follows);
    None where the module has none (the leading import block is the place). Set-ups inside
    functions, and from the `if __name__ == "__main__":` block on, do not count."""
    if not _imports_path_modules(layout.nodes):
        return None
    setup: int | None = None
    for index, node in enumerate(layout.nodes):
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        text = _statement_text(layout, index)
        if _MAIN_GUARD.match(text):
            break
        if not _DEFINITION.match(text) and _PATH_SETUP.search(text):
            setup = index
    if setup is None:
        return None
    after, seen_import = setup, False
    for index in range(setup + 1, len(layout.nodes)):
        text = _statement_text(layout, index)
        is_import = _is_import_block_statement(layout.nodes[index]) \
            or bool(_IMPORT_LINE.match(text))
        if is_import:
            after, seen_import = index, True
        elif seen_import or _DEFINITION.match(text) or _MAIN_GUARD.match(text):
            break
    return after


def _imports_path_modules(nodes: Sequence[cst.BaseStatement]) -> bool:
    """Whether the module imports `sys` or `site` at its top level (no code generated)."""
    for node in nodes:
        found = _import_of(node)
        if found is None and isinstance(node, (cst.If, cst.Try)):
            return True  # an import inside: the statements' texts tell
        if isinstance(found, cst.Import) and any(
                dotted_name(alias.name) in ("sys", "site") for alias in found.names):
            return True
        if isinstance(found, cst.ImportFrom) and found.module is not None \
                and dotted_name(found.module) in ("sys", "site"):
            return True
    return False


def _statement_text(layout: Layout, index: int) -> str:
    """The statement's own text (a unit the first pass blanked is read in the file's lines;
    without them only this statement's code is generated)."""
    if layout.lines is not None:
        statement = layout.statement(index)
        return "".join(layout.lines[statement.first : statement.end])
    node = layout.nodes[index]
    return layout.module.code_for_node(node.with_changes(leading_lines=()))  # type: ignore[call-arg]


def _existing_helper_import(layout: Layout, helper_module: str,
                            ) -> tuple[_Statement, cst.ImportFrom] | None:
    for index, statement in enumerate(layout.nodes):
        node = _import_of(statement)
        if isinstance(node, cst.ImportFrom) and not node.relative \
                and not isinstance(node.names, cst.ImportStar) \
                and dotted_name(node.module) == helper_module:
            return layout.statement(index), node
    return None


def _from_import(module: str, names: Sequence[str], newline: str,
                 below_code: bool = False) -> str:
    """The import line; `below_code`: below a module's sys.path set-up, where it must be,
    which pycodestyle's E402 (an import below code) is told."""
    noqa = "  # noqa: E402" if below_code else ""
    line = f"from {module} import {', '.join(names)}"
    if len(line) <= LINE_LENGTH:
        return line + noqa + newline
    inner = "".join(f"    {name},{newline}" for name in names)
    return f"from {module} import ({noqa}{newline}{inner}){newline}"


def _insertion(layout: Layout, text: str, after: int | None = None) -> LineEdit:
    """`text` placed after the statement `after`, else after the leading import block, or
    after the docstring, `__future__` imports and dunders when the module imports nothing
    there."""
    nodes = layout.nodes
    for index, node in enumerate(nodes if after is None else ()):
        if _is_import_block_statement(node):
            after = index
        elif not _is_header(node, index) and not _is_pass(node):
            break
    if after is None:
        header = 0
        while header < len(nodes) and _is_header(nodes[header], header):
            header += 1
        after = header - 1 if header else None
    if after is None:
        line = layout.statement(0).first if nodes else layout.line_count
        following = layout.statement(0) if nodes else None
    else:
        line = layout.statement(after).end
        following = layout.statement(after + 1) if after + 1 < len(nodes) else None
        if following is None and not layout.ends_with_newline:
            text = layout.newline + text
    if following is not None and not following.blank_before \
            and not _is_import_block_statement(following.node):
        text += layout.newline
    return LineEdit(line, line, text)


# -- removing ---------------------------------------------------------------------------------
class _Uses(cst.CSTVisitor):
    """Names read in a tree, with the nodes that read them; a string that could be an
    annotation or an `__all__` entry (`"torch.Tensor"`, `"Optional[GradScaler]"`) counts as a
    use of its identifiers, to be safe."""

    def __init__(self) -> None:
        super().__init__()
        self.names: dict[str, list[cst.CSTNode]] = {}

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        visiting.visit(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        visiting.visit(node.value, self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.read(node.value, node)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = node.evaluated_value
        if isinstance(value, str) and _ANNOTATION.fullmatch(value):
            for word in _WORD.findall(value):
                self.read(word, node)

    def read(self, name: str, node: cst.CSTNode) -> None:
        self.names.setdefault(name, []).append(node)


_WORD = re.compile(r"[A-Za-z_]\w*")
_ANNOTATION = re.compile(r"[\w.\[\], |]+")


def uses(tree: cst.CSTNode) -> dict[str, list[cst.CSTNode]]:
    finder = _Uses()
    visiting.visit(tree, finder)
    return finder.names


class _AllRead(Exception):
    """Every name `_Unread` looks for is read: the walk stops."""


class _Unread(_Uses):
    """`_Uses` that stops at the first point where each of `names` has been read."""

    def __init__(self, names: Iterable[str]) -> None:
        super().__init__()
        self.unread = set(names)

    def read(self, name: str, node: cst.CSTNode) -> None:
        self.unread.discard(name)
        if not self.unread:
            raise _AllRead


def unread(tree: cst.CSTNode, names: Iterable[str]) -> set[str]:
    """Those of `names` that `tree` does not read (as `uses` counts reads); the walk stops
    once each has been read (an import's name, read near the top of most modules)."""
    finder = _Unread(names)
    if finder.unread:
        with contextlib.suppress(_AllRead):
            visiting.visit(tree, finder)
    return finder.unread


class ModuleUses:
    """How many times a module reads a name (as `uses` counts them), counted one top-level
    statement at a time and only in the statements that could read it: those whose text
    spells the name, or holds an escape that could spell it in a string (`"\\x74orch"`).
    Without the layout's text lines, the whole module is read once."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._whole: dict[str, list[cst.CSTNode]] | None = None
        self._texts: list[str] | None = None
        self._escaped: list[bool] = []
        self._counted: dict[int, dict[str, list[cst.CSTNode]]] = {}

    def reads_exactly(self, name: str, count: int, line: int | None = None) -> bool:
        """Whether the module reads `name` `count` times; the statement on `line` (0-based),
        where the caller's node is, is counted first, and the count stops past `count`."""
        if self.layout.lines is None:
            if self._whole is None:
                self._whole = uses(self.layout.module)
            return len(self._whole.get(name, ())) == count
        total = 0
        for index in self._readers(name, line):
            total += len(self._uses_in(index).get(name, ()))
            if total > count:
                return False
        return total == count

    def _readers(self, name: str, line: int | None) -> Iterator[int]:
        if self._texts is None:
            lines = self.layout.lines or ()
            self._texts = ["".join(lines[s.first : s.end]) for s in self.layout.statements]
            self._escaped = [LETTER_ESCAPE.search(text) is not None for text in self._texts]
        first = self.layout.index_at(line) if line is not None else None
        if first is not None:
            yield first
        for index, text in enumerate(self._texts):
            if index != first and (self._escaped[index] or name in text):
                yield index

    def _uses_in(self, index: int) -> dict[str, list[cst.CSTNode]]:
        if index not in self._counted:
            self._counted[index] = uses(self.layout.statements[index].node)
        return self._counted[index]


def removal_edits(layout: Layout, unused: Iterable[str]) -> list[LineEdit]:
    """Edits removing the top-level imports of the `unused` names (whole lines, or one name of
    a `from` import). A name bound twice at the top level is left alone."""
    unused = set(unused)
    if not unused:
        return []
    counts: dict[str, int] = {}
    for top in layout.nodes:
        node = _import_of(top)
        for local, _alias in bound_by(node) if node is not None else ():
            counts[local] = counts.get(local, 0) + 1
    edits = []
    for index, top in enumerate(layout.nodes):
        node = _import_of(top)
        if node is None or _is_future(node):
            continue
        bound = bound_by(node)
        drop = [alias for local, alias in bound if local in unused and counts[local] == 1]
        if not drop:
            continue
        statement = layout.statement(index)
        kept = [alias for _local, alias in bound if alias not in drop]
        if not kept:
            edits.append(LineEdit(statement.first, statement.end, ""))
            continue
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        rewritten = node.with_changes(names=kept)
        if isinstance(node, cst.ImportFrom) and node.lpar is not None and len(kept) == 1:
            rewritten = rewritten.with_changes(lpar=None, rpar=None)
        line = statement.node.with_changes(body=[rewritten], leading_lines=())  # type: ignore[call-arg]
        edits.append(LineEdit(statement.first, statement.end,
                              layout.module.code_for_node(line)))
    return edits


def _is_future(node: cst.Import | cst.ImportFrom) -> bool:
    return isinstance(node, cst.ImportFrom) and dotted_name(node.module) == "__future__"


def imported_names(module: cst.Module) -> frozenset[str]:
    return frozenset(_bindings(module))


def unused_after(before: cst.Module, after: cst.Module, keep: Needs,
                 replaced: Iterable[cst.CSTNode] | None = None) -> set[str]:
    """Top-level imported names that `before` used and `after` no longer uses. `replaced`: the
    nodes of `before` that `after` replaced; a name read nowhere in them keeps every use."""
    imported = imported_names(after) - keep.helpers - keep.modules
    if replaced is not None:
        imported &= {name for node in replaced for name in uses(node)}
    gone = unread(after, imported)
    return gone - unread(before, gone)


# -- applying ---------------------------------------------------------------------------------
def apply(code: str, edits: Sequence[LineEdit]) -> str:
    """`code` with the (non-overlapping) line edits applied; lines as Python counts them."""
    lines = text_lines(code)
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        lines[edit.start : edit.end] = [edit.text]
    return "".join(lines)

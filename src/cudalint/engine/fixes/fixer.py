"""Apply the rules' node replacements in one pass, then add the imports they need and remove
the ones they left unused (cudalint.engine.fixes.imports), as text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import libcst as cst
from libcst.metadata import CodeRange

from cudalint.engine.first_pass.sparse import text_lines
from cudalint.engine.fixes import imports, local_imports
from cudalint.engine.fixes.imports import Layout, Needs
from cudalint.engine.report import NodeFix
from cudalint.engine.settings import INLINE_MODULE
from cudalint.engine.walk import visiting
from cudalint.finding import Edit, Position

if TYPE_CHECKING:
    from cudalint.engine.first_pass.sparse import Hidden
    from cudalint.engine.walk.context import Settings


class _Replace(cst.CSTTransformer):
    """Replace each target by its replacement; a target inside another fix's replacement is
    replaced there too, so nested fixes (`x.cuda().half().cuda()`) land in one pass.
    `holding`: the ids of the nodes that hold a target (`_holding`): LibCST rebuilds every
    node it enters, so it enters only those, and every other node stays as it was (the
    same object in the tree before and after); `functions` then holds the functions of the
    new tree that are not (those it rebuilt, those in the replacements)."""

    def __init__(self, replacements: Mapping[int, cst.CSTNode],
                 holding: frozenset[int] | None = None) -> None:
        super().__init__()
        self.replacements = replacements
        self.holding = holding
        self.functions: list[cst.FunctionDef] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return self.holding is None or id(node) in self.holding

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode:
        replaced = self._replaced(original_node, updated_node)
        if self.holding is not None and id(original_node) in self.holding:
            built = visiting.find_all(replaced, (cst.FunctionDef,)) \
                if replaced is not updated_node else (replaced,)
            self.functions.extend(f for f in built if isinstance(f, cst.FunctionDef))
        return replaced

    def _replaced(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode:
        replacement = self.replacements.get(id(original_node))
        if replacement is None:
            return updated_node
        inner = {key: value for key, value in self.replacements.items()
                 if key != id(original_node)}
        if not inner:
            return replacement
        return cast(cst.CSTNode, replacement.visit(_Replace(inner)))


@dataclass(frozen=True)
class FixedSource:
    code: str
    encoding: str = "utf-8"
    needs: Needs = field(default_factory=Needs)  # imports wanted but not added (notebooks)

    @property
    def bytes(self) -> bytes:
        return self.code.encode(self.encoding)


def needs_of(fixes: Iterable[NodeFix]) -> Needs:
    fixes = list(fixes)
    return Needs(frozenset(n for f in fixes for n in f.helpers),
                 frozenset(n for f in fixes for n in f.imports))


def apply_fixes(module: cst.Module, fixes: Sequence[NodeFix], settings: Settings, *,
                add_imports: bool = True, remove_unused: bool = True) -> FixedSource:
    """The module's code with every fix applied and its imports added (unless `add_imports`
    is False: then `needs` says what is missing) and the imports it emptied removed."""
    replacements = {id(fix.target): fix.replacement for fix in fixes}
    replace = _Replace(replacements, _holding(module, (fix.target for fix in fixes)))
    replaced = module.visit(replace)
    if remove_unused and local_imports.may_empty(replace.functions):
        replaced = local_imports.without_emptied_imports(module, replaced)
    wanted, helper_module = helper_imports(replaced, needs_of(fixes), settings)
    layout = Layout(replaced)
    edits: list[imports.LineEdit] = []
    if remove_unused:
        unused = imports.unused_after(module, replaced, wanted, (f.target for f in fixes))
        edits += imports.removal_edits(layout, unused)
    if add_imports:
        edits += imports.add_edits(layout, wanted, helper_module)
        wanted = Needs()
    code = imports.apply(replaced.code, edits) if edits else replaced.code
    return FixedSource(code, module.encoding, wanted)


def helper_imports(module: cst.Module, needs: Needs, settings: Settings) -> tuple[Needs, str]:
    """What `module` does not import yet of `needs`, and the module to import it from: the
    settings' helper, or none (the functions carried inline) where the helper's file may not
    be extended and lacks one of them (`Settings.helper_defines`: the editor, stdin)."""
    wanted = imports.missing(module, needs, settings.helper_module)
    defines = settings.helper_defines
    if defines is None or wanted.helpers <= defines:
        return wanted, settings.helper_module
    return imports.missing(module, wanted, INLINE_MODULE), INLINE_MODULE


def _holding(root: cst.CSTNode, targets: Iterable[cst.CSTNode]) -> frozenset[int]:
    """The ids of the nodes that are or hold one of the `targets`: every node on the path from
    `root` down to each target. The walk does not enter whitespace, comments and punctuation
    (`visiting.INERT`), unless a target is such a node."""
    wanted = {id(target): type(target) for target in targets}
    prune = visiting.INERT if visiting.INERT.isdisjoint(wanted.values()) else frozenset()
    found: set[int] = set()
    path: list[cst.CSTNode] = []
    stack: list[tuple[cst.CSTNode, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        del path[depth:]
        path.append(node)
        if id(node) in wanted:
            found.update(map(id, path))
        stack.extend((child, depth + 1) for child in visiting.children(node)
                     if type(child) not in prune)
    return frozenset(found)


class EditPlanner:
    """The text edits of each fix of one module, as ruff reports them: the replaced node, the
    imports it needs, the imports it leaves unused. What every fix shares (the module's
    layout, its imports) is computed once, and without generating the module's code when the
    caller gives `starts` (where each top-level statement starts:
    cudalint.engine.first_pass.outline) and `text`; whether a fix removed an import's last use is
    counted only in the statements that name it (`imports.ModuleUses`)."""

    def __init__(self, module: cst.Module, positions: Mapping[cst.CSTNode, CodeRange],
                 settings: Settings, hidden: Hidden | None = None, *,
                 starts: Sequence[int] | None = None, text: str | None = None) -> None:
        self.module = module
        self.positions = positions
        self.settings = settings
        # Functions LibCST did not read: a name they spell out may be a use of the import.
        self.hidden = hidden
        self._starts = starts
        self._text = text
        self._layout: Layout | None = None
        self._uses: imports.ModuleUses | None = None
        self._imported: frozenset[str] | None = None
        self._added: dict[Needs, tuple[Edit, ...]] = {}

    @property
    def layout(self) -> Layout:
        if self._layout is None:
            lines = text_lines(self._text) if self._text is not None else None
            self._layout = Layout(self.module, self._starts, lines)
        return self._layout

    def edits(self, fix: NodeFix) -> tuple[Edit, ...]:
        where = self.positions[fix.target]
        edits = [
            Edit(
                self.module.code_for_node(fix.replacement),
                Position(where.start.line, where.start.column + 1),
                Position(where.end.line, where.end.column + 1),
            )
        ]
        needs = needs_of([fix])
        edits += self._removals(fix, needs, where.start.line - 1)
        if needs:
            edits += self._additions(needs)
        return tuple(edits)

    def _additions(self, needs: Needs) -> tuple[Edit, ...]:
        if needs not in self._added:
            wanted, helper_module = helper_imports(self.module, needs, self.settings)
            line_edits = imports.add_edits(self.layout, wanted, helper_module)
            self._added[needs] = tuple(e.as_edit() for e in line_edits)
        return self._added[needs]

    def _removals(self, fix: NodeFix, needs: Needs, line: int) -> list[Edit]:
        """`line`: the fix's first line (0-based)."""
        if self._imported is None:
            self._imported = imports.imported_names(self.module)
        if not self._imported:
            return []
        inside = imports.uses(fix.target)
        candidates = (self._imported & inside.keys()) - needs.helpers - needs.modules
        if not candidates:
            return []
        kept = imports.uses(fix.replacement)
        unused = {name for name in candidates
                  if not kept.get(name) and not self._hidden_names(name)
                  and self._module_uses().reads_exactly(name, len(inside[name]), line)}
        return [e.as_edit() for e in imports.removal_edits(self.layout, unused)]

    def _hidden_names(self, name: str) -> bool:
        return self.hidden is not None and name in self.hidden.words

    def _module_uses(self) -> imports.ModuleUses:
        if self._uses is None:
            self._uses = imports.ModuleUses(self.layout)
        return self._uses

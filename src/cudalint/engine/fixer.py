"""Apply the rules' node replacements in one pass, and schedule their imports once."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata import CodeRange

from cudalint.engine.context import dotted_name
from cudalint.engine.report import NodeFix
from cudalint.finding import Edit, Position

if TYPE_CHECKING:
    from cudalint.engine.context import Settings


class _Replace(cst.CSTTransformer):
    def __init__(self, replacements: Mapping[int, cst.CSTNode]) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode:
        return self.replacements.get(id(original_node), updated_node)


def apply_fixes(module: cst.Module, fixes: Sequence[NodeFix], settings: Settings) -> cst.Module:
    """The module with every fix's target replaced, and the names they use imported."""
    replaced = module.visit(_Replace({id(fix.target): fix.replacement for fix in fixes}))
    return _add_imports(replaced, fixes, settings)


def _add_imports(module: cst.Module, fixes: Iterable[NodeFix], settings: Settings) -> cst.Module:
    fixes = list(fixes)
    helpers = sorted({name for fix in fixes for name in fix.helpers})
    modules = sorted({name for fix in fixes for name in fix.imports})
    if not helpers and not modules:
        return module
    context = CodemodContext()
    for name in modules:
        AddImportsVisitor.add_needed_import(context, name)
    for name in helpers:
        AddImportsVisitor.add_needed_import(context, settings.helper_module, name)
    return _wrap_long_import(AddImportsVisitor(context).transform_module(module),
                             settings.helper_module)


# Past this length the helper import is written one name a line, as black and ruff format it.
_LINE_LENGTH = 88


def _wrap_long_import(module: cst.Module, helper_module: str) -> cst.Module:
    body = list(module.body)
    for index, statement in enumerate(body):
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
            continue
        node = statement.body[0]
        if not isinstance(node, cst.ImportFrom) or isinstance(node.names, cst.ImportStar) \
                or dotted_name(node.module) != helper_module or node.lpar is not None:
            continue
        line = module.code_for_node(statement.with_changes(leading_lines=()))
        if len(line.rstrip()) <= _LINE_LENGTH:
            continue
        newline = module.default_newline
        aliases = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in node.names]
        names = "".join(f"    {module.code_for_node(a)},{newline}" for a in aliases)
        wrapped = cst.parse_statement(f"from {helper_module} import ({newline}{names}){newline}",
                                      config=module.config_for_parsing)
        body[index] = wrapped.with_changes(leading_lines=statement.leading_lines)
        return module.with_changes(body=body)
    return module


def non_overlapping(
    candidates: Iterable[tuple[NodeFix, CodeRange]],
) -> list[NodeFix]:
    """The fixes of one pass: in source order, skipping any that overlaps one already taken.
    The skipped ones are applied by the next pass, as ruff does."""
    chosen: list[NodeFix] = []
    last_end: tuple[int, int] = (0, 0)
    for fix, where in sorted(candidates, key=lambda c: (c[1].start.line, c[1].start.column)):
        start = (where.start.line, where.start.column)
        if start < last_end:
            continue
        chosen.append(fix)
        last_end = (where.end.line, where.end.column)
    return chosen


def fix_edits(
    module: cst.Module,
    fix: NodeFix,
    positions: Mapping[cst.CSTNode, CodeRange],
    settings: Settings,
) -> tuple[Edit, ...]:
    """The text edits of one fix, as ruff reports them: the replaced node, then the imports."""
    where = positions[fix.target]
    edits = [
        Edit(
            module.code_for_node(fix.replacement),
            Position(where.start.line, where.start.column + 1),
            Position(where.end.line, where.end.column + 1),
        )
    ]
    with_imports = _add_imports(module, [fix], settings)
    if with_imports is not module:
        edits.extend(_line_edits(module.code, with_imports.code))
    return tuple(edits)


def _line_edits(before: str, after: str) -> list[Edit]:
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    edits = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            edits.append(Edit("".join(new[j1:j2]), Position(i1 + 1, 1), Position(i2 + 1, 1)))
    return edits

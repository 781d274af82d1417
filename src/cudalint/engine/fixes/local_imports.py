"""A function's own imports that its fixes emptied: `from torch.cuda.amp import autocast`
written inside a function whose last `autocast(...)` a fix rewrote is removed, as a top-level
import is (cudalint.engine.fixes.imports.unused_after), so that the fix adds no F401.

Only an import statement of its own line (no `;`), in the function's own statements (an
`if`, `with` or `try` of the function included, a nested function or class not): the names
the function no longer reads while it read them before the fixes leave it, the line goes with
the last of its names (the others, still read or never read, stay). A block left empty gets
`pass`. Functions are matched between the code before and after the fixes by
their order and names (fixes replace expressions and statements, never a function)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import libcst as cst

from cudalint.engine.fixes.imports import bound_by, uses
from cudalint.engine.walk import visiting


def without_emptied_imports(before: cst.Module, after: cst.Module) -> cst.Module:
    """`after` without the function-level imports its fixes emptied."""
    old, new = _functions(before), _functions(after)
    if not new or len(old) != len(new):
        return after
    drop: dict[int, frozenset[str]] = {}  # an import line -> the names it no longer binds
    for was, now in zip(old, new, strict=True):
        if was.name.value != now.name.value:
            return after  # not the same functions: remove nothing
        if was is now:  # no fix entered it (fixer._Replace): it reads what it read
            continue
        imports = list(_own_imports(now))
        if not imports:
            continue
        read_before, read_after = uses(was), uses(now)
        for statement, names in imports:
            gone = frozenset(n for n in names if read_before.get(n) and not read_after.get(n))
            if gone:
                drop[id(statement)] = gone
    return after.visit(_Drop(drop)) if drop else after


def may_empty(changed: Iterable[cst.FunctionDef]) -> bool:
    """Whether `without_emptied_imports` may remove anything, given the functions of `after`
    that are not those of `before` (the others read what they read): one with imports of its
    own."""
    return any(next(_own_imports(function), None) is not None for function in changed)


def _functions(module: cst.Module) -> list[cst.FunctionDef]:
    return [node for node in visiting.find_all(module, (cst.FunctionDef,))
            if isinstance(node, cst.FunctionDef)]


def _own_imports(function: cst.FunctionDef,
                 ) -> Iterator[tuple[cst.SimpleStatementLine, list[str]]]:
    """Each import line of the function's own statements, with the names it binds."""
    pending: list[cst.CSTNode] = [function.body]
    while pending:
        node = pending.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not function:
            continue
        if isinstance(node, cst.SimpleStatementLine):
            if len(node.body) == 1 and isinstance(node.body[0], (cst.Import, cst.ImportFrom)):
                names = [local for local, _alias in bound_by(node.body[0])]
                if names:
                    yield node, names
            continue
        pending.extend(child for child in node.children  # statements hold no statement
                       if not isinstance(child, cst.BaseExpression))


class _Drop(cst.CSTTransformer):
    def __init__(self, drop: dict[int, frozenset[str]]) -> None:
        super().__init__()
        self.drop = drop

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine,
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        gone = self.drop.get(id(original_node))
        if gone is None:
            return updated_node
        node = updated_node.body[0]
        assert isinstance(node, (cst.Import, cst.ImportFrom))  # _own_imports' lines
        kept = [alias for local, alias in bound_by(node) if local not in gone]
        if not kept:
            return cst.RemovalSentinel.REMOVE
        # the names still read stay imported (`from torch.cuda.amp import GradScaler`)
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        rewritten = node.with_changes(names=kept)
        if isinstance(node, cst.ImportFrom) and node.lpar is not None and len(kept) == 1:
            rewritten = rewritten.with_changes(lpar=None, rpar=None)
        return updated_node.with_changes(body=[rewritten])

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        if original_node.body and not updated_node.body:
            return updated_node.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated_node

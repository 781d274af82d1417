"""Lint one Python source: keyword pre-filter, parse, one traversal, positions, noqa."""

from __future__ import annotations

import ast
import codecs
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import CodeRange

from cudalint.engine import noqa, trusted_parse
from cudalint.engine.context import PythonContext, Settings
from cudalint.engine.fixer import EditPlanner
from cudalint.engine.outline import Outline, blanked, outline, parse_quietly, stand_ins
from cudalint.engine.positions import StatementPositions, whole_module_positions
from cudalint.engine.prefilter import Prefilter
from cudalint.engine.report import NodeFix, Report
from cudalint.engine.sparse import Hidden, Unit, blank, leaves, units_of
from cudalint.engine.traversal import walk
from cudalint.finding import Edit, Finding, Fix, Position, error_finding

if TYPE_CHECKING:
    from cudalint.rules.base import PythonRule

BOM = b"\xef\xbb\xbf"


@dataclass
class PythonResult:
    findings: list[Finding]
    module: cst.Module | None = None
    # The fix behind each finding that has one, with the range of the node it replaces.
    fixes: list[tuple[Finding, NodeFix, CodeRange]] = field(default_factory=list)
    text: str | None = None  # the module's code: what was read, as LibCST would write it
    # With `reuse` (cudalint.engine.sparse): every leaf unit, and those whose findings are all
    # here (the others' are the caller's to keep).
    units: tuple[Unit, ...] = ()
    checked: tuple[Unit, ...] = ()


def parse_both(data: bytes, path: Path) -> tuple[ast.Module, cst.Module] | Finding:
    """The module as `ast` and LibCST read it, or an error finding saying why it could not be
    read. CPython reads the file first: what it refuses is a syntax error with its own message
    and position (LibCST accepts some such files, and crashes on others), and code nested
    deeper than LibCST can walk is an error line rather than a RecursionError."""
    tree = _compiled(data, path)
    if isinstance(tree, Finding):
        return tree
    parsed = _parse_cst(data.removeprefix(BOM), path)
    return parsed if isinstance(parsed, Finding) else (tree, parsed)


def _parse_cst(source: bytes, path: Path) -> cst.Module | Finding:
    try:
        return trusted_parse.parse_module(source)
    except cst.ParserSyntaxError as error:
        return error_finding(path, f"SyntaxError: {error.message}", error.raw_line,
                             error.raw_column + 1)
    except (UnicodeDecodeError, LookupError, SyntaxError) as error:
        return error_finding(path, f"could not decode the file: {one_line(error)}")
    except ValueError as error:  # LibCST: a form feed in indentation, and the like
        return error_finding(path, f"LibCST cannot read this file: {one_line(error)}")
    except RecursionError:
        return error_finding(path, TOO_DEEP)


# AST depth beyond which LibCST's recursive parser and visitors fail or slow to minutes
# (199 nested calls, a 5,000-long attribute chain); the deepest file in torch is 43 levels.
MAX_DEPTH = 120
TOO_DEEP = f"code nested more than {MAX_DEPTH} levels deep; cudalint does not check this file"


def _compiled(data: bytes, path: Path, tree: ast.Module | None = None) -> ast.Module | Finding:
    if tree is None:
        try:
            tree = parse_quietly(data, filename=str(path))
        except SyntaxError as error:
            return error_finding(path, f"SyntaxError: {error.msg}", error.lineno or 1,
                                 max(error.offset or 1, 1))
        except (ValueError, UnicodeDecodeError, LookupError) as error:
            return error_finding(path, f"could not decode the file: {one_line(error)}")
        except (RecursionError, MemoryError):
            return error_finding(path, TOO_DEEP)
    return error_finding(path, TOO_DEEP) if _deeper_than(tree, MAX_DEPTH, data) else tree


def _null_bytes_reason(data: bytes) -> str:
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "not UTF-8 (UTF-32 text); not checked"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "not UTF-8 (UTF-16 text); not checked"
    return "not Python source: it contains null bytes (UTF-16 text or binary); not checked"


def too_deep(tree: ast.AST, data: bytes) -> bool:
    """Whether `tree` (read from `data`) is nested deeper than cudalint checks (MAX_DEPTH)."""
    return _deeper_than(tree, MAX_DEPTH, data)


def _deeper_than(tree: ast.AST, limit: int, data: bytes) -> bool:
    """Whether the tree is deeper than `limit`. Each level of an expression takes at least one
    character of its text (`-x`, `a.b`, `f(x)`), so an expression too short to reach the limit
    is not walked: most of a file's nodes are in such expressions."""
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, ast.expr) and depth + _span(node, starts) + 3 <= limit:
            continue
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


def _span(node: ast.expr, starts: list[int]) -> int:
    """At least the number of characters of the expression's text."""
    end_line, end_column = node.end_lineno, node.end_col_offset
    if end_line is None or end_column is None or end_line > len(starts) - 1:
        return 1 << 30
    if end_line == node.lineno:
        return end_column - node.col_offset
    return starts[end_line - 1] - starts[node.lineno - 1] + end_column


def lint_python(
    data: bytes,
    path: Path,
    rules: Sequence[type[PythonRule]],
    settings: Settings,
    *,
    prefilter: Prefilter | None = None,
    want_edits: bool = False,
    cell: int | None = None,
    sparse: bool = True,
    reuse: Callable[[Unit], bool] | None = None,
    tree: ast.Module | None = None,
    shallow: bool = False,
) -> PythonResult:
    """Findings for one module; the `prefilter` of the enabled rules lets a file skip parsing,
    and (with `sparse`) lets LibCST skip the functions that name nothing the rules look for
    (cudalint.engine.sparse): `result.module` then lacks them, so `--fix` parses whole.
    `reuse(unit)`: True for a leaf unit whose findings the caller knows (an editor's earlier
    check): it is not read either, and has no findings in the result. `tree`: the file as
    `ast` read it, when the caller has it already; `shallow`: the caller found it no deeper
    than cudalint checks (`too_deep`; an editor's check re-reads only what an edit touched)."""
    if b"\0" in data:  # UTF-16 text: the pre-filter would skip it silently
        return PythonResult([error_finding(path, _null_bytes_reason(data))])
    if prefilter is not None:
        prefilter = prefilter.within(data)  # the terms the file names: a part names no other
        if prefilter is None:
            return PythonResult([])
    compiled = tree if shallow and tree is not None else _compiled(data, path, tree)
    if isinstance(compiled, Finding):
        return PythonResult([compiled])
    tree, source = compiled, data.removeprefix(BOM)
    units = units_of(source, tree) if reuse is not None else []
    hidden = _hidden(source, tree, prefilter, units, reuse) if sparse and prefilter else []
    parsed = _parse_cst(blank(source, hidden) if hidden else source, path)
    if isinstance(parsed, Finding) and hidden:  # never: blanking keeps the file valid
        hidden, parsed = [], _parse_cst(source, path)
    if isinstance(parsed, Finding):
        return PythonResult([parsed])
    text = source.decode(parsed.encoding)
    ctx = PythonContext(parsed, settings, path=path, hidden=Hidden(hidden, text), text=text)
    first_pass = _outline(source, parsed, tree, prefilter, hidden)
    reported = walk(ctx, rules, () if first_pass is None else first_pass.skip)
    result = PythonResult([], parsed, text=text, units=tuple(leaves(units)),
                          checked=_checked(units, hidden, reuse))
    if not ctx.reports:
        return result
    positions = (whole_module_positions(parsed) if first_pass is None
                 else StatementPositions(parsed, first_pass, reported.places, reported.chains))
    _positioned(result, ctx, positions, path, settings, want_edits=want_edits, cell=cell,
                starts=None if first_pass is None else first_pass.starts)
    return result


def _hidden(source: bytes, tree: ast.Module, prefilter: Prefilter, units: list[Unit],
            reuse: Callable[[Unit], bool] | None) -> list[Unit]:
    """The units LibCST does not read: those the first pass finds irrelevant, and those the
    caller reuses (never a unit inside another)."""
    found = blanked(source, tree, prefilter, units or None)
    if reuse is None:
        return found
    skipped = {id(unit.node) for unit in found}
    outer = {id(unit.node) for unit in found if unit.top_level}
    for unit in units:
        if id(unit.node) in outer:
            continue
        found.extend(leaf for leaf in leaves([unit])
                     if id(leaf.node) not in skipped and reuse(leaf))
    return found


def _checked(units: list[Unit], hidden: list[Unit],
             reuse: Callable[[Unit], bool] | None) -> tuple[Unit, ...]:
    """The leaf units whose findings are all in the result (all but the reused ones)."""
    if reuse is None:
        return ()
    hidden_ids = {id(unit.node) for unit in hidden}
    return tuple(leaf for leaf in leaves(units)
                 if id(leaf.node) not in hidden_ids or not reuse(leaf))


def _outline(source: bytes, parsed: cst.Module, tree: ast.Module, prefilter: Prefilter | None,
             hidden: list[Unit]) -> Outline | None:
    """Where each statement LibCST read starts, and which statements the traversal skips:
    with the whole file read, the functions that name nothing the rules look for; else the
    statements that stand in for the hidden units."""
    if not hidden:
        return outline(source, parsed, prefilter, tree)
    first_pass = outline(source, parsed, None, tree)
    if first_pass is None:
        return None
    skip = stand_ins(parsed, first_pass, {id(unit.node) for unit in hidden})
    return replace(first_pass, skip=frozenset(skip))


def _positioned(
    result: PythonResult,
    ctx: PythonContext,
    positions: Mapping[cst.CSTNode, CodeRange],
    path: Path,
    settings: Settings,
    *,
    want_edits: bool,
    cell: int | None,
    starts: Sequence[int] | None = None,
) -> None:
    """`starts`: where each top-level statement starts (the first pass's), for the edits."""
    module = ctx.module
    found = [(report, _finding(report, positions[report.node], path, cell))
             for report in ctx.reports]
    rows = {row for _, f in found for row in (f.location.row, f.end_location.row)}
    suppress = noqa.parse_python_noqa(result.text or "", rows)
    seen: set[tuple[str, int, int]] = set()
    planner = EditPlanner(module, positions, settings, ctx.hidden, starts=starts,
                          text=result.text) if want_edits else None
    for report, finding in found:
        key = (report.code, finding.location.row, finding.location.column)
        if key in seen or noqa.is_suppressed(finding, suppress):
            continue
        seen.add(key)
        if report.fix is not None:
            edits = _edits(planner, report.fix) if planner is not None else ()
            fix = Fix(report.fix.applicability, report.fix.message, edits)
            finding = finding.replace(fix=fix)
            result.fixes.append((finding, report.fix, positions[report.fix.target]))
        result.findings.append(finding)


def _edits(planner: EditPlanner, fix: NodeFix) -> tuple[Edit, ...]:
    try:
        return planner.edits(fix)
    except ValueError:  # LibCST refuses the module's indentation (a form feed): no edits
        return ()


def _finding(report: Report, where: CodeRange, path: Path, cell: int | None) -> Finding:
    finding = Finding(
        code=report.code,
        message=report.message,
        path=path,
        location=Position(where.start.line, where.start.column + 1),
        end_location=Position(where.end.line, where.end.column + 1),
        severity=report.severity,
        cell=cell,
        extra=report.extra,
    )
    return finding.with_guard() if report.guarded else finding


def one_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__

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

from cudalint.engine.first_pass import lazy_ast
from cudalint.engine.first_pass.outline import Outline, hidden_parts, named, outline, stand_ins
from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.first_pass.runs import Run, Tables, blank_runs
from cudalint.engine.first_pass.sparse import Hidden, Unit, blank, leaves, units_of
from cudalint.engine.fixes.fixer import EditPlanner
from cudalint.engine.locate import noqa
from cudalint.engine.locate.positions import StatementPositions, whole_module_positions
from cudalint.engine.reading import trusted_parse
from cudalint.engine.reading.ast_parse import parse_quietly
from cudalint.engine.reading.depth import BOM, MAX_DEPTH, TOO_DEEP, deeper_than
from cudalint.engine.report import NodeFix, Report
from cudalint.engine.walk.context import PythonContext, Settings
from cudalint.engine.walk.traversal import walk
from cudalint.finding import Edit, Finding, Fix, Position, error_finding
from cudalint.runtime.helper import inline_rows

if TYPE_CHECKING:
    from cudalint.engine.contract import PythonRule


@dataclass
class PythonResult:
    findings: list[Finding]
    module: cst.Module | None = None
    # The fix behind each finding that has one, with the range of the node it replaces.
    fixes: list[tuple[Finding, NodeFix, CodeRange]] = field(default_factory=list)
    text: str | None = None  # the module's code: what was read, as LibCST would write it
    # With `reuse` (cudalint.engine.first_pass.sparse): every leaf unit, and those whose findings
    # are all here (the others' are the caller's to keep).
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
        return _too_deep(path)


def _compiled(data: bytes, path: Path, tree: ast.Module | None = None,
              prefilter: Prefilter | None = None, *, lazy: bool = True) -> ast.Module | Finding:
    """The module as `ast` reads it, or the error finding of a file it refuses or that is
    nested too deep. `prefilter`: the first pass's terms, where it hides what names none: a
    top-level function or class whose text names none is not read yet (with `lazy`:
    cudalint.engine.first_pass.lazy_ast), and the depth is checked after the first pass, of what
    LibCST reads alone (`read_too_deep`)."""
    if tree is None and prefilter is not None and lazy:
        tree = lazy_ast.parse(data, named(prefilter))
    if tree is None:
        try:
            tree = parse_quietly(data, filename=str(path))
        except SyntaxError as error:
            return error_finding(path, f"SyntaxError: {error.msg}", error.lineno or 1,
                                 max(error.offset or 1, 1))
        except (ValueError, UnicodeDecodeError, LookupError) as error:
            return error_finding(path, f"could not decode the file: {one_line(error)}")
        except (RecursionError, MemoryError):
            return _too_deep(path)
    if prefilter is not None:
        return tree
    return _too_deep(path) if deeper_than(tree, MAX_DEPTH, data) else tree


def _too_deep(path: Path) -> Finding:
    """The error line of a file nested deeper than cudalint checks: valid Python that cudalint
    could not check (exit 2)."""
    return error_finding(path, TOO_DEEP, undone=True)


def read_too_deep(tree: ast.Module, hidden: list[Unit], data: bytes) -> bool:
    """Whether what LibCST reads of `tree` (all but the `hidden` units) is nested deeper than
    cudalint checks: a unit it does not read cannot hurt it, however deep."""
    skipped = frozenset(id(unit.node) for unit in hidden)
    read = [node for node in tree.body if id(node) not in skipped]
    return deeper_than(ast.Module(body=read, type_ignores=[]), MAX_DEPTH, data, skipped)


def _null_bytes_reason(data: bytes) -> str:
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "not UTF-8 (UTF-32 text); not checked"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "not UTF-8 (UTF-16 text); not checked"
    return "not Python source: it contains null bytes (UTF-16 text or binary); not checked"


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
    parsed: cst.Module | None = None,
) -> PythonResult:
    """Findings for one module; the `prefilter` of the enabled rules lets a file skip parsing,
    and (with `sparse`) lets LibCST skip the functions that name nothing the rules look for
    (cudalint.engine.first_pass.sparse): `result.module` then lacks them, so `--fix` parses whole.
    `reuse(unit)`: True for a leaf unit whose findings the caller knows (an editor's earlier
    check): it is not read either, and has no findings in the result. `tree`: the file as
    `ast` read it, when the caller has it already; `shallow`: the caller found it no deeper
    than cudalint checks (`too_deep`; an editor's check re-reads only what an edit touched).
    `parsed`: the whole module as LibCST reads `data`, when the caller has it (`--fix`, which
    parses what it wrote); LibCST reads it again where it reads only part of it."""
    if b"\0" in data:  # UTF-16 text: the pre-filter would skip it silently
        return PythonResult([error_finding(path, _null_bytes_reason(data))])
    if prefilter is not None:
        prefilter = prefilter.within(data)  # the terms the file names: a part names no other
        if prefilter is None:
            return PythonResult([])
    lazy = sparse and prefilter is not None and tree is None and reuse is None
    compiled = tree if shallow and tree is not None \
        else _compiled(data, path, tree, prefilter if lazy else None)
    if isinstance(compiled, Finding):
        return PythonResult([compiled])
    arguments = (data, path, rules, settings, prefilter, want_edits, cell, sparse, reuse, lazy,
                 parsed)
    try:
        return _lint_tree(compiled, *arguments)
    except lazy_ast.Unreadable:  # never seen: a placeholder's lines read otherwise
        whole = _compiled(data, path, None, prefilter if lazy else None, lazy=False)
        return PythonResult([whole]) if isinstance(whole, Finding) \
            else _lint_tree(whole, *arguments)


def _lint_tree(tree: ast.Module, data: bytes, path: Path, rules: Sequence[type[PythonRule]],
               settings: Settings, prefilter: Prefilter | None, want_edits: bool,
               cell: int | None, sparse: bool, reuse: Callable[[Unit], bool] | None,
               deferred: bool, whole: cst.Module | None) -> PythonResult:
    """`deferred`: the depth is to be checked after the first pass (`_compiled`); `whole`:
    the whole module as LibCST reads `data`, if the caller has it."""
    source = data.removeprefix(BOM)
    units = units_of(source, tree) if reuse is not None else []
    parts = _hidden(source, tree, prefilter, units, reuse) if sparse and prefilter \
        else ([], [])
    if parts is None:  # no statement names a term of the rules: none can report anything
        every = tuple(leaves(units))
        return PythonResult([], units=every, checked=every)
    hidden, runs = parts
    if deferred and read_too_deep(tree, hidden, data):
        return PythonResult([_too_deep(path)])
    parsed = _parse_cst(blank_runs(blank(source, hidden), runs), path) if hidden or runs \
        else whole if whole is not None else _parse_cst(source, path)
    if isinstance(parsed, Finding) and (hidden or runs):  # never: blanking keeps it valid
        hidden, runs, parsed = [], [], _parse_cst(source, path)
    if isinstance(parsed, Finding):
        return PythonResult([parsed])
    text = source.decode(parsed.encoding)
    ctx = PythonContext(parsed, settings, path=path, hidden=Hidden(hidden, text, runs),
                        text=text)
    first_pass = _outline(source, parsed, tree, prefilter, hidden)
    reported = walk(ctx, rules, () if first_pass is None else first_pass.skip)
    result = PythonResult([], parsed, text=text, units=tuple(leaves(units)),
                          checked=_checked(units, hidden, reuse))
    if not ctx.reports:
        return result
    positions = (whole_module_positions(parsed) if first_pass is None
                 else StatementPositions(parsed, first_pass, reported.places, reported.chains,
                                         Tables(first_pass.nodes, runs, text)))
    _positioned(result, ctx, positions, path, settings, want_edits=want_edits, cell=cell,
                starts=None if first_pass is None else first_pass.starts)
    return result


def _hidden(source: bytes, tree: ast.Module, prefilter: Prefilter, units: list[Unit],
            reuse: Callable[[Unit], bool] | None) -> tuple[list[Unit], list[Run]] | None:
    """The units LibCST does not read: those the first pass finds irrelevant, and those the
    caller reuses (never a unit inside another); and the runs of tables it does not read.
    None: no statement names a term of the rules (`hidden_parts`)."""
    parts = hidden_parts(source, tree, prefilter, units or None)
    if parts is None:
        return None
    found, runs = parts
    if reuse is None:
        return found, runs
    skipped = {id(unit.node) for unit in found}
    outer = {id(unit.node) for unit in found if unit.top_level}
    for unit in units:
        if id(unit.node) in outer:
            continue
        found.extend(leaf for leaf in leaves([unit])
                     if id(leaf.node) not in skipped and reuse(leaf))
    return found, runs


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
    inline = inline_rows(result.text or "")
    if inline:  # the inline device helper's own code (cudalint.runtime.helper)
        found = [(report, finding) for report, finding in found
                 if not any(first <= finding.location.row <= last for first, last in inline)]
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

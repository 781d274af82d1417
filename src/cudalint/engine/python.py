"""Lint one Python source: keyword pre-filter, parse, one traversal, positions, noqa."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from cudalint.engine import noqa
from cudalint.engine.context import PythonContext, Settings
from cudalint.engine.fixer import EditPlanner
from cudalint.engine.prefilter import Prefilter
from cudalint.engine.traversal import walk
from cudalint.finding import Finding, Fix, Position, Severity
from cudalint.rules.base import NodeFix, PythonRule, Report

BOM = b"\xef\xbb\xbf"


@dataclass
class PythonResult:
    findings: list[Finding]
    module: cst.Module | None = None
    # The fix behind each finding that has one, with the range of the node it replaces.
    fixes: list[tuple[Finding, NodeFix, CodeRange]] = field(default_factory=list)


def error_finding(path: Path, message: str, row: int = 1, column: int = 1) -> Finding:
    """A file that could not be checked: reported with its path, as ruff reports a syntax error."""
    where = Position(row, column)
    return Finding(None, message, path, where, where, Severity.ERROR)


def parse(data: bytes, path: Path) -> cst.Module | Finding:
    """The module, or an error finding saying why it could not be read."""
    try:
        return cst.parse_module(data.removeprefix(BOM))
    except cst.ParserSyntaxError as error:
        return error_finding(path, f"SyntaxError: {error.message}", error.raw_line,
                             error.raw_column + 1)
    except (UnicodeDecodeError, LookupError, SyntaxError) as error:
        return error_finding(path, f"could not decode the file: {_one_line(error)}")


def lint_python(
    data: bytes,
    path: Path,
    rules: Sequence[type[PythonRule]],
    settings: Settings,
    *,
    prefilter: Prefilter | None = None,
    want_edits: bool = False,
    cell: int | None = None,
) -> PythonResult:
    """Findings for one module; the `prefilter` of the enabled rules lets a file skip parsing."""
    if prefilter is not None and not prefilter.matches(data):
        return PythonResult([])
    parsed = parse(data, path)
    if isinstance(parsed, Finding):
        return PythonResult([parsed])
    ctx = PythonContext(parsed, settings, path=path)
    walk(ctx, rules)
    if not ctx.reports:
        return PythonResult([], parsed)
    return _positioned(ctx, path, settings, want_edits=want_edits, cell=cell)


def _positioned(
    ctx: PythonContext, path: Path, settings: Settings, *, want_edits: bool, cell: int | None
) -> PythonResult:
    module = ctx.module
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    suppress = noqa.parse_python_noqa(module.code)
    result = PythonResult([], module)
    seen: set[tuple[str, int, int]] = set()
    planner = EditPlanner(module, positions, settings) if want_edits else None
    for report in ctx.reports:
        finding = _finding(report, positions[report.node], path, cell)
        key = (report.code, finding.location.row, finding.location.column)
        if key in seen or noqa.is_suppressed(finding, suppress):
            continue
        seen.add(key)
        if report.fix is not None:
            edits = planner.edits(report.fix) if planner is not None else ()
            fix = Fix(report.fix.applicability, report.fix.message, edits)
            finding = replace(finding, fix=fix)
            result.fixes.append((finding, report.fix, positions[report.fix.target]))
        result.findings.append(finding)
    return result


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


def _one_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__

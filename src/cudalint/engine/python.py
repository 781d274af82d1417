"""Lint one Python source: keyword pre-filter, parse, one traversal, positions, noqa."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import CodeRange

from cudalint.engine import noqa
from cudalint.engine.context import PythonContext, Settings
from cudalint.engine.fixer import EditPlanner
from cudalint.engine.outline import outline
from cudalint.engine.positions import StatementPositions, whole_module_positions
from cudalint.engine.prefilter import Prefilter
from cudalint.engine.report import NodeFix, Report
from cudalint.engine.traversal import walk
from cudalint.finding import Finding, Fix, Position, Severity

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
    first_pass = outline(data.removeprefix(BOM), parsed, prefilter)
    reported = walk(ctx, rules, () if first_pass is None else first_pass.skip)
    text = data.removeprefix(BOM).decode(parsed.encoding)
    if not ctx.reports:
        return PythonResult([], parsed, text=text)
    positions = (whole_module_positions(parsed) if first_pass is None
                 else StatementPositions(parsed, first_pass.starts, reported))
    result = PythonResult([], parsed, text=text)
    _positioned(result, ctx, positions, path, settings, want_edits=want_edits, cell=cell)
    return result


def _positioned(
    result: PythonResult,
    ctx: PythonContext,
    positions: Mapping[cst.CSTNode, CodeRange],
    path: Path,
    settings: Settings,
    *,
    want_edits: bool,
    cell: int | None,
) -> None:
    module = ctx.module
    suppress = noqa.parse_python_noqa(result.text or "")
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

"""The human formats: `full` (with a source excerpt) and `concise`, the footer, statistics.

Colour and styles appear only on a terminal (output/printer.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from cudalint.engine.checkers.job import FileReport
from cudalint.finding import Applicability, Finding, Severity
from cudalint.output.common import (
    count_text,
    fixed,
    fixed_by,
    fixed_by_severity,
    found_before,
)
from cudalint.output.paths import display_path
from cudalint.output.printer import Piece, Printer

_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def headline(finding: Finding) -> list[Piece]:
    """`path:row:col: CODE [*] message` (and `cell N` for notebooks, as ruff)."""
    pieces: list[Piece] = [(display_path(finding.path), "bold")]
    if finding.cell is not None:
        pieces.append((f":cell {finding.cell}", "cyan"))
    pieces.append((f":{finding.location.row}:{finding.location.column}: ", "cyan"))
    if finding.code is not None:
        pieces += [(finding.code, _SEVERITY_STYLE[finding.severity]), " "]
    if finding.fix is not None and finding.fix.applicability is Applicability.SAFE:
        pieces.append(("[*] ", "cyan"))
    pieces.append(finding.message)
    if finding.guarded:
        pieces.append((" (guarded)", "dim"))
    return pieces


def excerpt(finding: Finding, lines: Sequence[str]) -> list[Piece]:
    """The offending line with a caret underline, as ruff's full format."""
    row = finding.location.row
    if not 1 <= row <= len(lines):
        return []
    line = lines[row - 1].rstrip("\r\n")
    gutter = len(str(row))
    start = finding.location.column - 1
    end = finding.end_location.column - 1 if finding.end_location.row == row else len(line)
    width = max(end - start, 1)
    style = _SEVERITY_STYLE[finding.severity]
    pieces: list[Piece] = [
        (f"{' ' * gutter} |\n", "blue"), (f"{row} | ", "blue"), f"{line}\n",
        (f"{' ' * gutter} | ", "blue"), (" " * start + "^" * width, style),
    ]
    if finding.code:
        guarded = ", guarded" if finding.guarded else ""
        pieces.append((f" {finding.code} ({finding.severity}{guarded})", style))
    if finding.fix is not None:
        pieces.append((f"\n{' ' * gutter} = help: {finding.fix.message}", "dim"))
    return pieces


def render_findings(reports: Sequence[FileReport], out: Printer, *, full: bool) -> None:
    for report in reports:
        lines = (report.text or "").splitlines() if full and report.findings else []
        for finding in sorted(report.findings, key=Finding.sort_key):
            out.print(*headline(finding))
            if full and finding.code is not None and finding.cell is None:
                out.print(*excerpt(finding, lines))
                out.print()


def render_diffs(reports: Sequence[FileReport], out: Printer) -> None:
    for report in reports:
        if report.diff:
            out.print(report.diff, end="")


def render_footer(
    reports: Sequence[FileReport], out: Printer, *, fixing: bool, diff: bool, unsafe: bool
) -> None:
    """`Found 37 findings: 3 errors, 20 warnings, 14 info (10 fixed, 27 remaining).`: the
    counts before fixing are the ones a plain check gives."""
    findings = [f for r in reports for f in r.findings]
    before = Counter(f.severity for r in reports for f in found_before(r))
    gone = fixed_by_severity(reports)
    if diff:
        out.print(f"Would fix {count_text(gone)}." if gone else "No fixes available.")
        return
    if not before and not findings:
        out.print(("All checks passed!", "green"))
        return
    summary = count_text(before)
    if fixing:
        summary += f" ({gone.total()} fixed, {len(findings)} remaining)"
    out.print(f"Found {summary}.")
    # What --fix (--unsafe-fixes) makes go: the findings with a fix, and those another
    # finding's fix rewrites away (`by_other`: counted, not marked [*]), as `fixed` counts.
    reach: Counter[Applicability | None] = Counter()
    by_other: Counter[Applicability | None] = Counter()
    for finding in findings:
        by = fixed_by(finding)
        reach[by] += 1
        if by is not None and (finding.fix is None or finding.fix.applicability is not by):
            by_other[by] += 1
    safe, hidden = reach[Applicability.SAFE], reach[Applicability.UNSAFE]
    if safe and not fixing:
        out.print(f"[*] {safe} fixable with the `--fix` option{_by_other(by_other, True)}.")
    if hidden and not unsafe and by_other[Applicability.UNSAFE]:
        out.print(f"({hidden} more fixable with the `--unsafe-fixes` option"
                  f"{_by_other(by_other, False)}.)")
    elif hidden and not unsafe:
        out.print(f"({hidden} hidden {'fix' if hidden == 1 else 'fixes'} can be enabled "
                  "with the `--unsafe-fixes` option.)")


def _by_other(by_other: Counter[Applicability | None], safe: bool) -> str:
    """How many of the fixable findings have no fix of their own (or a less safe one): the
    fix of another finding rewrites their code."""
    n = by_other[Applicability.SAFE if safe else Applicability.UNSAFE]
    if not n:
        return ""
    return f" ({n} of them by another finding's fix)" if safe \
        else f", {n} of them by another finding's fix"


def render_fixed(reports: Sequence[FileReport], out: Printer) -> None:
    """--fix-only's one line: what was fixed, and nothing when nothing was."""
    gone = fixed_by_severity(reports)
    if gone:
        out.print(f"Fixed {count_text(gone)}.")


def render_fixes(reports: Sequence[FileReport], out: Printer) -> None:
    """--show-fixes: what --fix changed, per file and code, as ruff lists it."""
    from cudalint.rules import rule_by_code  # the registry, for the rules' names

    total = fixed_by_severity(reports)
    if not total:
        return
    lines = [f"Fixed {count_text(total)}:"]
    for report in reports:
        codes: Counter[str] = Counter()
        for (code, _), n in fixed(report).items():
            codes[code] += n
        if codes:
            lines.append(f"- {display_path(report.path)}:")
        for code, n in sorted(codes.items()):
            rule = rule_by_code(code)
            lines.append(f"    {n} \u00d7 {code} ({rule.name if rule else 'unreadable-file'})")
    out.print("\n".join(lines))


def render_helpers(reports: Sequence[FileReport], out: Printer, *, diff: bool) -> None:
    """Where the standalone device helper the fixed files import went, and how to change it."""
    importers: dict[Path, list[Path]] = {}
    for r in reports:
        if r.helper is not None and (r.helper_written or (diff and not r.helper.exists())):
            importers.setdefault(r.helper, []).append(r.path)
    for helper, paths in sorted(importers.items()):
        verb = "Would write" if diff else "Wrote"
        shown = [_shown(path) for path in sorted(paths)]
        listed = ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")
        out.print(f"{verb} the device helper {_shown(helper)}, which the fixed files import "
                  f"(standalone: needs only torch): {listed}. To import another module "
                  'instead, set `helper = "<module>"` in [tool.cudalint], e.g. `helper = '
                  '"cudalint.device"` to depend on cudalint.')


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def render_statistics(reports: Sequence[FileReport], out: Printer) -> None:
    """One row per code, most frequent first: count, code, [*] when fixable, rule name."""
    from cudalint.rules import rule_by_code  # the registry, for the rules' names

    findings = [f for r in reports for f in r.findings]
    counts = Counter(f.code or "syntax-error" for f in findings)
    fixable = {f.code for f in findings if f.fix and f.fix.applicability is Applicability.SAFE}
    width = max((len(str(n)) for n in counts.values()), default=1)
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rule = rule_by_code(code) if code != "syntax-error" else None
        mark = "[*]" if code in fixable else "[ ]"
        name = rule.name if rule else "unreadable-file"
        out.write(f"{count:>{width}}\t{code}\t{mark} {name}\n")  # tabs kept, for `cut`




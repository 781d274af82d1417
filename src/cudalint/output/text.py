"""The human formats: `full` (with a source excerpt) and `concise`, the footer, statistics.

Colour and styles appear only on a terminal: rich drops them when the output is piped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.text import Text

from cudalint.engine.runner import FileReport
from cudalint.finding import Applicability, Finding, Severity
from cudalint.output.paths import display_path
from cudalint.rules import rule_by_code

_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def headline(finding: Finding) -> Text:
    """`path:row:col: CODE [*] message` (and `cell N` for notebooks, as ruff)."""
    text = Text()
    text.append(display_path(finding.path), style="bold")
    if finding.cell is not None:
        text.append(f":cell {finding.cell}", style="cyan")
    text.append(f":{finding.location.row}:{finding.location.column}: ", style="cyan")
    if finding.code is not None:
        text.append(finding.code, style=_SEVERITY_STYLE[finding.severity])
        text.append(" ")
    if finding.fix is not None and finding.fix.applicability is Applicability.SAFE:
        text.append("[*] ", style="cyan")
    text.append(finding.message)
    if finding.guarded:
        text.append(" (guarded)", style="dim")
    return text


def excerpt(finding: Finding, lines: Sequence[str]) -> Text:
    """The offending line with a caret underline, as ruff's full format."""
    row = finding.location.row
    if not 1 <= row <= len(lines):
        return Text()
    line = lines[row - 1].rstrip("\r\n")
    gutter = len(str(row))
    start = finding.location.column - 1
    end = finding.end_location.column - 1 if finding.end_location.row == row else len(line)
    width = max(end - start, 1)
    text = Text()
    text.append(f"{' ' * gutter} |\n", style="blue")
    text.append(f"{row} | ", style="blue")
    text.append(f"{line}\n")
    text.append(f"{' ' * gutter} | ", style="blue")
    text.append(" " * start + "^" * width, style=_SEVERITY_STYLE[finding.severity])
    if finding.code:
        text.append(f" {finding.code}", style=_SEVERITY_STYLE[finding.severity])
    if finding.fix is not None:
        text.append(f"\n{' ' * gutter} = help: {finding.fix.message}", style="dim")
    return text


def render_findings(reports: Sequence[FileReport], console: Console, *, full: bool) -> None:
    for report in reports:
        lines = (report.text or "").splitlines()
        for finding in sorted(report.findings, key=Finding.sort_key):
            console.print(headline(finding), soft_wrap=True, highlight=False)
            if full and finding.code is not None and finding.cell is None:
                console.print(excerpt(finding, lines), soft_wrap=True, highlight=False)
                console.print()


def render_diffs(reports: Sequence[FileReport], console: Console) -> None:
    for report in reports:
        if report.diff:
            console.print(report.diff, end="", soft_wrap=True, highlight=False, markup=False)


def render_footer(
    reports: Sequence[FileReport], console: Console, *, fixing: bool, diff: bool, unsafe: bool
) -> None:
    findings = [f for r in reports for f in r.findings]
    fixed = sum(r.fixed for r in reports)
    if diff:
        console.print(f"Would fix {fixed} {_plural(fixed)}." if fixed else "No fixes available.",
                      highlight=False)
        return
    if not findings and not fixed:
        console.print("All checks passed!", style="green")
        return
    count = len(findings)
    if fixing:
        console.print(f"Found {count + fixed} {_plural(count + fixed)} "
                      f"({fixed} fixed, {count} remaining).", highlight=False)
    else:
        console.print(f"Found {count} {_plural(count)}.", highlight=False)
    safe = sum(1 for f in findings if f.fix and f.fix.applicability is Applicability.SAFE)
    hidden = sum(1 for f in findings if f.fix and f.fix.applicability is Applicability.UNSAFE)
    if safe and not fixing:
        console.print(f"[*] {safe} fixable with the `--fix` option.", highlight=False,
                      markup=False)
    if hidden and not unsafe:
        console.print(f"({hidden} hidden {'fix' if hidden == 1 else 'fixes'} can be enabled "
                      "with the `--unsafe-fixes` option.)", highlight=False, markup=False)


def render_helpers(reports: Sequence[FileReport], console: Console, *, diff: bool) -> None:
    """Where the standalone device helper the fixed files import went, and how to change it."""
    helpers = sorted({r.helper for r in reports if r.helper is not None
                      and (r.helper_written or (diff and not r.helper.exists()))})
    for helper in helpers:
        verb = "Would write" if diff else "Wrote"
        console.print(f"{verb} the device helper {_shown(helper)}, which the fixed files import "
                      "(standalone: needs only torch). To import another module instead, set "
                      '`helper = "<module>"` in [tool.cudalint], e.g. `helper = '
                      '"cudalint.device"` to depend on cudalint.', highlight=False, markup=False)


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def render_statistics(reports: Sequence[FileReport], console: Console) -> None:
    """One row per code, most frequent first: count, code, [*] when fixable, rule name."""
    findings = [f for r in reports for f in r.findings]
    counts = Counter(f.code or "syntax-error" for f in findings)
    fixable = {f.code for f in findings if f.fix and f.fix.applicability is Applicability.SAFE}
    width = max((len(str(n)) for n in counts.values()), default=1)
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rule = rule_by_code(code) if code != "syntax-error" else None
        mark = "[*]" if code in fixable else "[ ]"
        name = rule.name if rule else "unreadable-file"
        # Plain text with tabs, for `cut` and `sort`: rich would expand the tabs.
        console.file.write(f"{count:>{width}}\t{code}\t{mark} {name}\n")


def _plural(count: int) -> str:
    return "error" if count == 1 else "errors"


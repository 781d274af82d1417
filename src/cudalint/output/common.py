"""What every output format says the same way: a finding's message and the counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from cudalint.engine.checkers.job import FileReport
from cudalint.finding import FIXED_WITH_OTHERS, Applicability, Finding, Severity

GUARDED = " (guarded)"


def message(finding: Finding) -> str:
    """The message, marked when a CUDA guard lowered the finding's severity."""
    return finding.message + GUARDED if finding.guarded else finding.message


def found_before(report: FileReport) -> list[Finding]:
    """The file's findings before --fix ran (those shown without it)."""
    return report.found if report.found is not None else report.findings


def fixed_by(finding: Finding) -> Applicability | None:
    """Which fixes make the finding go: safe ones (`--fix`), unsafe ones too
    (`--unsafe-fixes`), or none: its own fix, or another finding's (FIXED_WITH_OTHERS)."""
    own = None if finding.fix is None else finding.fix.applicability
    if own is Applicability.SAFE:
        return own
    others = finding.extra.get(FIXED_WITH_OTHERS)
    return Applicability(others) if others is not None else own


def fixed(report: FileReport) -> Counter[tuple[str, Severity]]:
    """How many findings of each code and severity fixing made go away."""
    if report.found is None:  # not fixed
        return Counter()
    before = Counter((f.code or "syntax-error", f.severity) for f in found_before(report))
    after = Counter((f.code or "syntax-error", f.severity) for f in report.findings)
    return before - after


def fixed_by_severity(reports: Sequence[FileReport]) -> Counter[Severity]:
    total: Counter[Severity] = Counter()
    for report in reports:
        for (_, severity), count in fixed(report).items():
            total[severity] += count
    return total


def sorted_findings(reports: Sequence[FileReport]) -> list[Finding]:
    return sorted((f for r in reports for f in r.findings), key=Finding.sort_key)


def count_text(severities: Counter[Severity]) -> str:
    """`2 errors`, or `37 findings: 3 errors, 20 warnings, 14 info` when severities differ."""
    parts = [_count(n, severity) for severity, n in sorted(severities.items(), reverse=True) if n]
    total = sum(severities.values())
    if len(parts) == 1:
        return parts[0]
    return f"{total} {'finding' if total == 1 else 'findings'}: " + ", ".join(parts)


def _count(n: int, severity: Severity) -> str:
    plural = "" if n == 1 or severity is Severity.INFO else "s"
    return f"{n} {severity}{plural}"

"""What `--fix` will make of a check's findings: the findings that go with another finding's
fix, though they have no such fix of their own (CUD109 on a `torch.cuda.synchronize()` run at
import, which CUD105's fix turns into the helper's call; CUD113 on `device=rank` in a
`.cuda(device=rank)` that CUD102's fix rewrites). A check marks them (FIXED_WITH_OTHERS) so
that its footer's "N fixable" is what `--fix` then counts as fixed (output/common.py:
`fixed_by`, `fixed`).

Only fixing tells which findings go, so the check fixes the code in memory, as `--diff`
does, and only where a finding without a safe fix of its own lies within a finding that has
one or within the code its fix replaces (the unsafe fixes are simulated only where a finding
with no fix at all lies so): that is rare, and only those modules (or notebook cells) pay for
it. A module's simulation reads only the functions and classes that hold those nearby
findings (engine/checkers/python.py blanks the others, as the first pass does): a fix
elsewhere takes only its own finding, and a finding elsewhere is never marked. Where a module
needs both simulations (the safe fixes, every fix), both start from one lint of what they
read, and a fix rebuilds only the nodes that hold its target (engine/fixes/fixer.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from cudalint.finding import FIXED_WITH_OTHERS, Applicability, Finding, Position, Severity

if TYPE_CHECKING:
    from libcst.metadata import CodeRange

    from cudalint.engine.report import NodeFix

# The findings before and after fixing, and whether a finding is in what the simulation read.
Simulated = tuple[Sequence[Finding], Sequence[Finding], Callable[[Finding], bool]]
# (unsafe, the findings near a fix) -> Simulated (None: the fixes cannot be applied)
Simulation = Callable[[bool, Sequence[Finding]], "Simulated | None"]
_Key = tuple[str, Severity]
_Range = tuple[Position, Position]


def foreseen(findings: list[Finding], fixes: Sequence[tuple[Finding, NodeFix, CodeRange]],
             simulate: Simulation) -> list[Finding]:
    """`findings` (of one module, or cell), with FIXED_WITH_OTHERS set on those that go with
    other findings' fixes. `fixes`: the findings with a fix, each with its fix and the range
    of the node the fix replaces (PythonResult.fixes)."""
    if not fixes:
        return findings
    regions = [(fix.applicability, span)
               for finding, fix, where in fixes
               for span in (_span(finding), _range(where))]
    safe_near = [i for i, f in enumerate(findings) if _own(f) is not Applicability.SAFE
                 and _within(f, [s for a, s in regions if a is Applicability.SAFE])]
    unsafe_near = [i for i, f in enumerate(findings) if _own(f) is None
                   and _within(f, [s for _, s in regions])]
    has_unsafe = any(fix.applicability is Applicability.UNSAFE for _, fix, _ in fixes)
    marked = list(findings)
    nearby = [findings[i] for i in sorted({*safe_near, *unsafe_near})]
    if safe_near:
        _mark(marked, simulate(False, nearby), safe_near, Applicability.SAFE)
    if unsafe_near and has_unsafe:
        _mark(marked, simulate(True, nearby), unsafe_near, Applicability.UNSAFE)
    return marked


def everywhere(_finding: Finding) -> bool:
    """A simulation's `read` when it read the whole source."""
    return True


def _mark(findings: list[Finding], simulated: Simulated | None, near: list[int],
          applicability: Applicability) -> None:
    """Mark as many of each code's findings (those `near` a fix first) as fixing with
    `applicability` makes go beyond those it fixes already, in what the simulation read."""
    if simulated is None:
        return
    before, after, read = simulated
    gone = Counter(map(_key, before)) - Counter(map(_key, after))
    reached = Counter(_key(f) for f in findings if read(f) and _reach(f, applicability))
    order = near + sorted(set(range(len(findings))) - set(near))
    for index in order:
        finding = findings[index]
        key = _key(finding)
        if gone[key] > reached[key] and not _reach(finding, applicability) and read(finding):
            findings[index] = finding.replace(
                extra={**finding.extra, FIXED_WITH_OTHERS: applicability.value})
            reached[key] += 1


def _reach(finding: Finding, applicability: Applicability) -> bool:
    """Whether fixing with `applicability` (unsafe: every fix) makes the finding go, as far
    as its marks and its own fix say."""
    by = finding.extra.get(FIXED_WITH_OTHERS) or _own(finding)
    return by is not None and (applicability is Applicability.UNSAFE or by == "safe")


def _own(finding: Finding) -> Applicability | None:
    return None if finding.fix is None else finding.fix.applicability


def _key(finding: Finding) -> _Key:
    return (finding.code or "syntax-error", finding.severity)


def _span(finding: Finding) -> _Range:
    return (finding.location, finding.end_location)


def _range(where: CodeRange) -> _Range:
    return (Position(where.start.line, where.start.column + 1),
            Position(where.end.line, where.end.column + 1))


def _within(finding: Finding, spans: Sequence[_Range]) -> bool:
    """Whether the finding lies in one of the spans (a finding around a fix, such as CUD112
    on a whole `if` block, stays)."""
    return any(start <= finding.location and finding.end_location <= end
               for start, end in spans)

"""The static side of the report: every finding, where it lives, and the effort it asks for
once `cudalint check --fix` (and, separately, `--unsafe-fixes`) has run.

The fixes are computed by the engine itself, in diff mode (nothing is written): a finding is
*fixable* when `--fix` removes it, *unsafe-fixable* when only `--unsafe-fixes` does. What
remains is a native-CUDA blocker, work by hand, a guarded path, or an advisory.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from cudalint import rules as registry
from cudalint.config import Config
from cudalint.engine.running.runner import RunOptions, run
from cudalint.finding import Applicability, Category, Finding
from cudalint.output.common import found_before
from cudalint.output.paths import display_path
from cudalint.report.paths import PathClass, classify

# Families whose blockers mean the code itself needs CUDA-only native code or libraries.
NATIVE_FAMILIES = ("CUD2", "CUD3")


class Effort(str, enum.Enum):
    FIXABLE = "fixable"  # `cudalint check --fix` removes it
    UNSAFE_FIXABLE = "unsafe-fixable"  # only `--unsafe-fixes` removes it: review the diff
    BLOCKER = "blocker"  # native CUDA code or a CUDA-only library, unguarded
    BY_HAND = "by-hand"  # breaks off CUDA, no fix: a person ports it
    GUARDED = "guarded"  # behind a CUDA check or an optional import: runs without CUDA
    ADVISORY = "advisory"  # runs off CUDA; worth a look


@dataclass(frozen=True)
class Item:
    finding: Finding
    path: PathClass
    effort: Effort

    @property
    def where(self) -> str:
        return f"{display_path(self.finding.path)}:{self.finding.location.row}"

    @property
    def family(self) -> str:
        return (self.finding.code or "error")[:4]

    def to_dict(self) -> dict[str, object]:
        return {"code": self.finding.code, "where": self.where, "path": self.path.value,
                "effort": self.effort.value, "message": self.finding.message}


@dataclass(frozen=True)
class Audit:
    items: tuple[Item, ...]
    files: int = field(default=0, compare=False)  # how many files were checked

    def with_effort(self, *efforts: Effort) -> list[Item]:
        return [item for item in self.items if item.effort in efforts]

    def count(self, effort: Effort) -> int:
        return len(self.with_effort(effort))


def audit(paths: Sequence[Path], config: Config, jobs: int | None = None) -> Audit:
    """Check `paths` as they are and as `--fix` would leave them, in one run (`--diff`: each
    report holds the findings before fixing and those left after); a second run, as
    `--unsafe-fixes` would leave them, only when some finding has an unsafe fix."""
    reports = run(paths, config, RunOptions(diff=True, jobs=jobs), registry=registry)
    findings = [finding for report in reports for finding in found_before(report)]
    after_fix = [finding for report in reports for finding in report.findings]
    after_unsafe = after_fix
    if any(_unsafe_fix(finding) for finding in [*findings, *after_fix]):
        unsafe = RunOptions(diff=True, unsafe_fixes=True, jobs=jobs)
        after_unsafe = [finding for report in run(paths, config, unsafe, registry=registry)
                        for finding in report.findings]
    return replace(classify_effort(findings, after_fix, after_unsafe), files=len(reports))


def _unsafe_fix(finding: Finding) -> bool:
    return finding.fix is not None and finding.fix.applicability is Applicability.UNSAFE


def classify_effort(findings: Iterable[Finding], after_fix: Iterable[Finding],
                    after_unsafe: Iterable[Finding]) -> Audit:
    """Match what the fixes removed to the original findings by (file, code): lines move when a
    fix adds an import, codes and files do not. Within one (file, code), findings that carry a
    fix are taken as the removed ones first."""
    before = sorted(findings, key=_removal_order)
    kept_by_fix = Counter(map(_key, after_fix))
    kept_by_unsafe = Counter(map(_key, after_unsafe))
    left = Counter(map(_key, before))
    items = []
    for finding in before:
        key = _key(finding)
        left[key] -= 1
        rank = left[key]  # how many findings of this key come after this one
        if rank >= kept_by_unsafe[key] and rank >= kept_by_fix[key]:
            effort = Effort.FIXABLE
        elif rank >= kept_by_unsafe[key]:
            effort = Effort.UNSAFE_FIXABLE
        else:
            effort = _left(finding)
        items.append(Item(finding, classify(finding), effort))
    items.sort(key=lambda item: item.finding.sort_key())
    return Audit(tuple(items))


def _key(finding: Finding) -> tuple[str, str | None]:
    return str(Path(finding.path).resolve()), finding.code


def _removal_order(finding: Finding) -> tuple[str, str, int, tuple[str, int, int, int, str]]:
    fix = finding.fix
    order = 0 if fix and fix.applicability is Applicability.SAFE else 1 if fix else 2
    return (*_key_text(finding), order, finding.sort_key())


def _key_text(finding: Finding) -> tuple[str, str]:
    path, code = _key(finding)
    return path, code or ""


def _left(finding: Finding) -> Effort:
    """The effort of a finding no fix removes."""
    category = finding.category
    if category is Category.GUARDED:
        return Effort.GUARDED
    if category is Category.ADVISORY:
        return Effort.ADVISORY
    if (finding.code or "").startswith(NATIVE_FAMILIES):
        return Effort.BLOCKER
    return Effort.BY_HAND

"""The device helper files a run's fixes need (engine.project.helper_place): one per place,
holding what the fixed modules import from it, and what an earlier run wrote there. A helper
is written from the names alone (cudalint.runtime.helper.helper_module_text), so the same
names give the same bytes, and a later fix extends the file rather than rewriting it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cudalint.engine.checkers.job import FileReport, unified_diff
from cudalint.engine.project.helper_place import is_helper_copy
from cudalint.finding import error_finding
from cudalint.record import Record
from cudalint.runtime.helper import helper_module_text, module_names
from cudalint.writing import WriteError


class HelperPlan(Record):
    """One helper file: its text before the run (None: missing), after, and the fixed files
    that import it."""

    __slots__ = ("after", "before", "importers", "path")
    FIELDS = ("path", "before", "after", "importers")

    def __init__(self, path: Path, before: str | None, after: str,
                 importers: list[FileReport]) -> None:
        self.path = path
        self.before = before
        self.after = after
        self.importers = importers


def plan(reports: Sequence[FileReport]) -> list[HelperPlan]:
    """The helper files the fixed files of `reports` import, with what each must define."""
    importers: dict[Path, list[FileReport]] = {}
    for report in reports:
        if report.helper is not None:  # set with the names it imports (checkers.job)
            importers.setdefault(report.helper, []).append(report)
    plans = []
    for path, users in sorted(importers.items()):
        wanted = frozenset().union(*(report.helper_names for report in users))
        before = _read(path)
        have = frozenset() if before is None else module_names(before)
        if before is not None and wanted <= have:
            after = before
        else:
            after = helper_module_text(wanted | have)
        plans.append(HelperPlan(path, before, after, users))
    return plans


def _read(path: Path) -> str | None:
    """The helper at `path` as an earlier run wrote it; None where there is none."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data.decode("utf-8", errors="replace") if is_helper_copy(data) else None


def write(plans: Sequence[HelperPlan]) -> None:
    """Write each helper that is missing or lacks a name (the checks wrote it already, each
    before the first file importing it: engine.fixes.helper_file); an error is a line on the
    report of each file importing it. Every importer of a helper the run wrote says so."""
    from cudalint.engine.fixes.helper_file import ensure_helper

    for helper in plans:
        names = frozenset().union(*(report.helper_names for report in helper.importers))
        try:
            wrote = ensure_helper(helper.path, names)
        except WriteError as error:
            for report in helper.importers:
                report.findings.append(error_finding(
                    report.path, str(error).removeprefix("not written: "), undone=True))
            continue
        if wrote or any(report.helper_written for report in helper.importers):
            for report in helper.importers:
                report.helper_written = True


def diffs(plans: Sequence[HelperPlan]) -> list[FileReport]:
    """With --diff: each helper that would be written or extended, as a diff of its own."""
    found = []
    for helper in plans:
        if helper.after == helper.before:
            continue
        diff = unified_diff(helper.before, helper.after, helper.path)
        found.append(FileReport(helper.path, [], diff=diff))
    return found

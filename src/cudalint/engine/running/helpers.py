"""The device helper files a run's fixes need (engine.project.helper_place): one per place,
holding what the fixed modules import from it, and what an earlier run wrote there. A helper
is written from the names alone (cudalint.runtime.helper.helper_module_text), so the same
names give the same bytes, and a later fix extends the file rather than rewriting it: what
its user wrote in it stays (extended_module_text)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cudalint.engine.checkers.job import FileReport, unified_diff
from cudalint.finding import error_finding
from cudalint.record import Record
from cudalint.runtime.helper import (
    NotExtensible,
    extended_module_text,
    helper_module_text,
    module_names,
)
from cudalint.writing import WriteError


class HelperPlan(Record):
    """One helper file: its text before the run (None: missing), after, and the fixed files
    that import it."""

    __slots__ = ("after", "before", "importers", "path", "refused")
    FIELDS = ("path", "before", "after", "importers", "refused")

    def __init__(self, path: Path, before: str | None, after: str,
                 importers: list[FileReport], refused: str | None = None) -> None:
        self.path = path
        self.before = before
        self.after = after
        self.importers = importers
        self.refused = refused  # why --fix would not write it (a link, a FIFO...), or None


def plan(reports: Sequence[FileReport]) -> list[HelperPlan]:
    """The helper files the fixed files of `reports` import, with what each must define."""
    importers: dict[Path, list[FileReport]] = {}
    for report in reports:
        if report.helper is not None:  # set with the names it imports (checkers.job)
            importers.setdefault(report.helper, []).append(report)
    plans = []
    for path, users in sorted(importers.items()):
        wanted = frozenset().union(*(report.helper_names for report in users))
        try:
            before = _read(path)
        except WriteError as error:
            plans.append(HelperPlan(path, None, "", users, _refusal(path, error)))
            continue
        have = frozenset() if before is None else module_names(before)
        if before is not None and wanted <= have:
            after = before
        elif before is None:
            after = helper_module_text(wanted)
        else:
            try:
                after = extended_module_text(before, wanted)
            except NotExtensible:  # the run says so where it writes
                after = before
        plans.append(HelperPlan(path, before, after, users))
    return plans


def _read(path: Path) -> str | None:
    """The helper at `path` as an earlier run wrote it; None where there is none; WriteError
    where what is there would not be extended (a link, a FIFO, a module of the project's own),
    as --fix says (engine.fixes.helper_file)."""
    from cudalint.engine.fixes.helper_file import read_helper

    try:
        data = read_helper(path)
    except OSError as error:
        raise WriteError(error.strerror or type(error).__name__) from None
    return None if data is None else data.decode("utf-8", errors="replace")


def _refusal(path: Path, error: WriteError) -> str:
    return f"cannot write the device helper {path}: {error}"


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
        if helper.refused is not None:
            for report in helper.importers:
                report.findings.append(error_finding(report.path, helper.refused, undone=True))
            continue
        if helper.after == helper.before:
            continue
        diff = unified_diff(helper.before, helper.after, helper.path)
        found.append(FileReport(helper.path, [], diff=diff))
    return found

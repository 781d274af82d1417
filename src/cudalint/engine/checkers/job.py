"""What a checker is given and gives back: the `Job` of one file (its bytes, rules, settings
and what the run asks: check, fix or diff) and its `FileReport`; and what every checker
shares: running the file rules, writing (or diffing) a fixed file, and turning a checker's
failure into the file's error line. Hands the running stage one report per file."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from cudalint.finding import Finding, error_finding
from cudalint.kinds import FileKind, SourceFile
from cudalint.record import Record

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from typing import Any, Protocol, Self

    from cudalint.engine.contract import FileRule, PythonRule
    from cudalint.engine.first_pass.prefilter import Prefilter
    from cudalint.engine.settings import Settings

    class CheckOptions(Protocol):
        """What a checker reads of the run's options (cudalint.engine.running.runner's
        RunOptions)."""

        fix: bool
        unsafe_fixes: bool
        diff: bool
        want_edits: bool
        in_memory: bool

        def replace(self, **changes: Any) -> Self: ...


class FileReport(Record):
    """What the check of one file found (and did)."""

    __slots__ = ("cache_entry", "diff", "findings", "fixed", "fixed_data", "found", "helper",
                 "helper_names", "helper_written", "path", "text", "written")
    FIELDS = ("path", "findings", "text", "fixed", "diff", "written", "found", "fixed_data",
              "helper", "helper_written", "cache_entry", "helper_names")
    __hash__ = None  # type: ignore[assignment]

    def __init__(
        self,
        path: Path,
        findings: list[Finding],
        text: str | None = None,  # the checked text (after fixing), for source excerpts
        fixed: int = 0,  # fixes applied (or, with --diff, that would be)
        diff: str = "",
        written: bool = False,  # the fixed text was written to the file
        found: list[Finding] | None = None,  # with --fix or --diff: the findings before
        fixed_data: bytes | None = None,  # with RunOptions.in_memory: the fixed file
        helper: Path | None = None,  # the standalone helper the fixed file imports
        helper_written: bool = False,  # this run wrote that helper
        cache_entry: dict[str, Any] | None = None,  # the lint cache's record of this check
        helper_names: frozenset[str] = frozenset(),  # what the fixed file imports from it
    ) -> None:
        self.path = path
        self.findings = findings
        self.text = text
        self.fixed = fixed
        self.diff = diff
        self.written = written
        self.found = found
        self.fixed_data = fixed_data
        self.helper = helper
        self.helper_written = helper_written
        self.cache_entry = cache_entry
        self.helper_names = helper_names


class Job(Record):
    """One file's check: what it reads, with which rules, and whether it may write."""

    __slots__ = ("data", "file_rules", "kind", "options", "path", "prefilter", "python_rules",
                 "settings")
    FIELDS = ("path", "kind", "data", "python_rules", "file_rules", "settings", "prefilter",
              "options")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, path: Path, kind: FileKind, data: bytes,
                 python_rules: tuple[type[PythonRule], ...], file_rules: tuple[FileRule, ...],
                 settings: Settings, prefilter: Prefilter, options: CheckOptions) -> None:
        self.path = path
        self.kind = kind
        self.data = data
        self.python_rules = python_rules
        self.file_rules = file_rules
        self.settings = settings
        self.prefilter = prefilter
        self.options = options


Checker = Callable[[Job], FileReport]


def isolated(checker: Checker, job: Job) -> FileReport:
    """The checker's report, or the error line of a file it failed on: one file never ends
    the run, and no raw exception text reaches the user."""
    try:
        return checker(job)
    except RecursionError:
        reason = "too deeply nested for cudalint to check; not checked"
    except MemoryError:
        reason = "out of memory while checking this file; not checked"
    except Exception as error:
        reason = f"internal error ({type(error).__name__}) while checking this file; not checked"
    return FileReport(job.path, [error_finding(job.path, reason, undone=True)])


def finish_fix(
    job: Job, fixed: bytes, applied: int, findings: list[Finding], found: list[Finding],
    checker: Checker,
) -> FileReport:
    """Write (or diff) a fixed file; the report keeps the findings left after fixing, and
    those `found` before. A file that cannot be written is checked again, unfixed, by
    `checker` (the checker of its kind)."""
    text = fixed.decode("utf-8", errors="replace")
    report = FileReport(job.path, findings, text, applied, found=found)
    if job.options.in_memory:
        report.fixed_data = fixed
    if fixed == job.data:
        return report
    names = frozenset() if job.settings.helper_file is None \
        else imported_helpers(text, job.settings.helper_module)
    if names:
        report.helper, report.helper_names = job.settings.helper_file, names
    if job.options.diff:
        before = job.data.decode("utf-8", errors="replace")
        report.diff = unified_diff(before, text, job.path)
        return report
    if job.options.in_memory:
        return report
    from cudalint.engine.checkers.soundness import unsound  # only where a fix is written

    reason = unsound(job.kind, fixed, job.data, job.path)
    if reason is not None:
        return left_as_it_was(job, f"not written: {reason}", checker)
    from cudalint.writing import WriteError, write_fixed  # tempfile: only to write

    try:
        if report.helper is not None:  # first: no file may import a helper that is not there
            from cudalint.engine.fixes.helper_file import ensure_helper

            report.helper_written = ensure_helper(report.helper, names)
        write_fixed(job.path, fixed, job.data)
    except WriteError as error:
        return left_as_it_was(job, str(error), checker)
    report.written = True
    return report


def left_as_it_was(job: Job, reason: str, checker: Checker, *,
                   undone: bool = True) -> FileReport:
    """The findings of the file as it stays, after the error line saying why it was not fixed
    (`undone`: a file not written, which exits 2; a fix that did not parse exits 1)."""
    unfixed = job.replace(options=job.options.replace(fix=False, diff=False))
    report = isolated(checker, unfixed)
    report.findings.insert(0, error_finding(job.path, reason, undone=undone))
    return report


def imported_helpers(text: str, module: str) -> frozenset[str]:
    """The names `text` imports from `module` (`from m import a, b`, `from m import (a, b)`)."""
    pattern = rf"^[ \t]*from[ \t]+{re.escape(module)}[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)"
    names: set[str] = set()
    for match in re.finditer(pattern, text, re.MULTILINE):
        listed = match.group(1).strip("()\\ \t")
        for part in listed.replace("\\\n", " ").split(","):
            words = part.split()
            if words:
                names.add(words[0])
    return frozenset(names)


def run_file_rules(rules: Sequence[FileRule], source: SourceFile) -> list[Finding]:
    """Every rule's findings, each once: two rules reading one malformed file report it once.
    A rule that fails on an odd input reports an error line for that file, and the run goes on."""
    findings: list[Finding] = []
    for rule in rules:
        try:
            findings.extend(rule.check(source))
        except Exception as error:
            reason = f"internal error: {type(error).__name__}"
            findings.append(error_finding(source.path, f"{rule.code} could not read the file "
                                                       f"({reason})"))
    return list(dict.fromkeys(findings))


def unified_diff(before: str | None, after: str, path: Path) -> str:
    """`before` None: `path` is a new file (`--- /dev/null`)."""
    import difflib  # only for --diff

    shown = os.path.relpath(path) if Path.cwd() in Path(path).resolve().parents else str(path)
    return "".join(
        difflib.unified_diff(
            (before or "").splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile="/dev/null" if before is None else shown,
            tofile=shown,
        )
    )

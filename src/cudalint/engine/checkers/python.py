"""The checker of Python files: lint, or fix (or diff) then write."""

from __future__ import annotations

from cudalint.engine.checkers.job import FileReport, Job, finish_fix, left_as_it_was
from cudalint.finding import Finding

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from cudalint.engine.lint.autofix import FixOutcome
    from cudalint.engine.lint.foreseen import Simulated
    from cudalint.engine.lint.python import PythonResult


def check_python(job: Job) -> FileReport:
    options = job.options
    if not (options.fix or options.diff):
        from cudalint.engine.lint.python import lint_python  # LibCST: only to check a file

        result = lint_python(job.data, job.path, job.python_rules, job.settings,
                             prefilter=job.prefilter, want_edits=options.want_edits)
        findings = result.findings
        if result.fixes:  # what --fix will fix, for the footer
            from cudalint.engine.lint.foreseen import foreseen

            helpers = frozenset(name for _, fix, _ in result.fixes for name in fix.helpers)
            read: dict[str, Any] = {}  # what both simulations read, and their first lint
            findings = foreseen(findings, result.fixes,
                                lambda unsafe, near: _fixed(job, unsafe, near, helpers, read))
        return FileReport(job.path, findings, result.text)
    from cudalint.engine.lint.autofix import FixError, fix_python
    try:
        outcome = fix_python(job.data, job.path, job.python_rules, job.settings,
                             unsafe=options.unsafe_fixes, prefilter=job.prefilter)
    except FixError as error:
        return left_as_it_was(job, str(error), check_python, undone=False)
    left = outcome.result.findings
    if outcome.result.fixes and not options.unsafe_fixes:  # the hidden fixes, for the footer
        from cudalint.engine.lint.foreseen import foreseen

        fixed = job.replace(data=outcome.data)
        known: dict[str, Any] = {"nearby": None, "whole": outcome.result}  # a whole-file lint
        left = foreseen(left, outcome.result.fixes,
                        lambda unsafe, near: _fixed(fixed, unsafe, near, frozenset(), known)
                        if unsafe else None)
    return finish_fix(job, outcome.data, outcome.applied, left, outcome.found, check_python)


def _fixed(job: Job, unsafe: bool, near: Sequence[Finding], helpers: frozenset[str],
           read: dict[str, Any]) -> Simulated | None:
    """The findings before and after fixing the file in memory, and what of it was read
    (None: it cannot be fixed). `read`: what a simulation read ("nearby": the module with the
    units holding no finding of `near` blanked, cudalint.engine.lint.nearby; None where it
    reads the whole file) and its lint ("whole"), put there by the first simulation for the
    next one."""
    from cudalint.engine.lint.autofix import FixError, fix_python
    from cudalint.engine.lint.foreseen import everywhere
    from cudalint.engine.lint.nearby import nearby

    if "whole" not in read:
        part = nearby(job.data, near, helpers)
        read["nearby"] = part if part.hidden else None
        read["whole"] = _whole_lint(job, part.data)
    part = read["nearby"]
    try:
        outcome = fix_python(part.data if part else job.data, job.path, job.python_rules,
                             job.settings, unsafe=unsafe, prefilter=job.prefilter,
                             first=read["whole"])
    except FixError:
        outcome = None
    if part is not None and (outcome is None or part.blanks(_removed(read["whole"], outcome))):
        read["nearby"] = None  # an import a blanked unit may read: read the whole file
        read["whole"] = _whole_lint(job, job.data)
        return _fixed(job, unsafe, near, helpers, read)
    if outcome is None:
        return None
    return outcome.found, outcome.result.findings, part.read if part else everywhere


def _whole_lint(job: Job, data: bytes) -> PythonResult:
    from cudalint.engine.lint.python import lint_python

    return lint_python(data, job.path, job.python_rules, job.settings, prefilter=job.prefilter,
                       sparse=False)


def _removed(before: PythonResult, outcome: FixOutcome) -> frozenset[str]:
    """The top-level imports fixing removed (as unused)."""
    from cudalint.engine.fixes.imports import imported_names

    after = outcome.result.module
    if before.module is None or after is None:
        return frozenset()
    return imported_names(before.module) - imported_names(after)

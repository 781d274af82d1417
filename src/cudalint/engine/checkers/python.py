"""The checker of Python files: lint, or fix (or diff) then write."""

from __future__ import annotations

from cudalint.engine.checkers.job import FileReport, Job, finish_fix, left_as_it_was
from cudalint.finding import Finding

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
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

            whole: list[PythonResult] = []  # the whole-file lint both simulations start from
            findings = foreseen(findings, result.fixes,
                                lambda unsafe: _fixed(job, unsafe, whole))
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
        left = foreseen(left, outcome.result.fixes,  # outcome.result: a whole-file lint
                        lambda unsafe: _fixed(fixed, unsafe, [outcome.result]) if unsafe
                        else None)
    return finish_fix(job, outcome.data, outcome.applied, left, outcome.found, check_python)


def _fixed(job: Job, unsafe: bool, whole: list[PythonResult],
           ) -> tuple[list[Finding], list[Finding]] | None:
    """The findings before and after fixing the file in memory (None: it cannot be fixed).
    `whole`: the file's whole-file lint once a simulation has made it (it is put there), for
    the next one."""
    from cudalint.engine.lint.autofix import FixError, fix_python
    from cudalint.engine.lint.python import lint_python

    if not whole:
        whole.append(lint_python(job.data, job.path, job.python_rules, job.settings,
                                 prefilter=job.prefilter, sparse=False))
    try:
        outcome = fix_python(job.data, job.path, job.python_rules, job.settings,
                             unsafe=unsafe, prefilter=job.prefilter, first=whole[0])
    except FixError:
        return None
    return outcome.found, outcome.result.findings

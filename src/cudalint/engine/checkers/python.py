"""The checker of Python files: lint, or fix (or diff) then write."""

from __future__ import annotations

from cudalint.engine.checkers.job import FileReport, Job, finish_fix, left_as_it_was


def check_python(job: Job) -> FileReport:
    options = job.options
    if not (options.fix or options.diff):
        from cudalint.engine.lint.python import lint_python  # LibCST: only to check a file

        result = lint_python(job.data, job.path, job.python_rules, job.settings,
                             prefilter=job.prefilter, want_edits=options.want_edits)
        return FileReport(job.path, result.findings, result.text)
    from cudalint.engine.lint.autofix import FixError, fix_python
    try:
        outcome = fix_python(job.data, job.path, job.python_rules, job.settings,
                             unsafe=options.unsafe_fixes, prefilter=job.prefilter)
    except FixError as error:
        return left_as_it_was(job, str(error), check_python)
    return finish_fix(job, outcome.data, outcome.applied, outcome.result.findings, outcome.found,
                      check_python)

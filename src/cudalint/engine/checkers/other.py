"""The checker of every other file kind (requirements, environment files, Dockerfiles,
scripts, CMake, binaries): the FileRules of its kind, then `# noqa: CODE` on the finding's row
for the formats with `#` comments."""

from __future__ import annotations

from cudalint.engine.checkers.job import FileReport, Job, run_file_rules
from cudalint.finding import error_finding
from cudalint.kinds import FileKind, SourceFile


def check_other(job: Job) -> FileReport:
    """A non-Python file, read by the FileRules of its kind."""
    if not job.file_rules:
        return FileReport(job.path, [])
    text: str | None = None
    if job.kind not in (FileKind.SHARED_LIBRARY, FileKind.CUDA_SOURCE):
        try:
            text = job.data.decode("utf-8-sig")
        except UnicodeDecodeError:
            return FileReport(job.path, [error_finding(job.path, "not UTF-8 text")])
    source = SourceFile(job.path, job.kind, job.data, text)
    findings = run_file_rules(job.file_rules, source)
    if text is not None:
        from cudalint.engine.locate import noqa
        from cudalint.formats import dockerfile

        lines = text.splitlines()
        if job.kind is FileKind.DOCKERFILE:  # Docker allows comments on their own lines only
            lines = dockerfile.noqa_lines(lines)
        findings = noqa.unsuppressed(findings, lines)
    return FileReport(job.path, findings, text)

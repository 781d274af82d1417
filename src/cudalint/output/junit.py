"""`--output-format junit`: JUnit XML, one test suite per file and one failing test case per
finding, as ruff writes it; CI servers (Jenkins, GitLab, Azure) show it as test results. Only
the attributes of the common JUnit schema (Surefire's, which Jenkins validates) are used: the
position is in the failure's text."""

from __future__ import annotations

from collections.abc import Sequence
from xml.etree import ElementTree as ET

from cudalint.engine.checkers.job import FileReport
from cudalint.finding import Finding
from cudalint.output.common import message
from cudalint.output.paths import display_path


def _case(suite: ET.Element, finding: Finding, path: str) -> None:
    code = finding.code or "syntax-error"
    where = f"line {finding.location.row}, col {finding.location.column}"
    if finding.cell is not None:
        where = f"cell {finding.cell}, {where}"
    case = ET.SubElement(suite, "testcase", name=f"org.cudalint.{code}", classname=path)
    failure = ET.SubElement(case, "failure", message=message(finding),
                            type=str(finding.severity))
    failure.text = f"{where}, {code} {message(finding)}"


def render(reports: Sequence[FileReport]) -> str:
    root = ET.Element("testsuites", name="cudalint")
    total = 0
    for report in sorted(reports, key=lambda r: str(r.path)):
        if not report.findings:
            continue
        path = display_path(report.path)
        count = str(len(report.findings))
        suite = ET.SubElement(root, "testsuite", name=path, file=path, tests=count,
                              failures=count, errors="0")
        for finding in sorted(report.findings, key=Finding.sort_key):
            _case(suite, finding, path)
        total += len(report.findings)
    if not total:  # a passing run is one passing test, as ruff reports it
        suite = ET.SubElement(root, "testsuite", name="cudalint", tests="1", failures="0",
                              errors="0")
        ET.SubElement(suite, "testcase", name="No findings", classname="cudalint")
    root.set("tests", str(max(total, 1)))
    root.set("failures", str(total))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") \
        + "\n"

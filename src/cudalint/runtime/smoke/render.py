"""Show a SmokeReport: a rich table on a terminal, plain lines when piped, JSON on request."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

from cudalint.runtime.smoke.report import Hazard, SmokeReport, Status

_STYLES = {Status.PASS: "green", Status.FAIL: "bold red", Status.WARN: "yellow",
           Status.SKIPPED: "dim"}


def render(report: SmokeReport, stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    if stream.isatty():
        _render_rich(report, stream)
    else:
        stream.write(plain(report))


def plain(report: SmokeReport) -> str:
    lines = [f"cudalint smoke {report.target} on {report.device}"]
    lines += [f"  {check.status.value.upper():<8} {check.name:<12} {check.detail}"
              for check in report.checks]
    lines += [f"  requested and not run: {option}" for option, _ in report.unmet]
    if report.hazards:
        lines.append("hazards:")
        lines += [f"  {hazard.severity.value.upper():<8} {_hazard_line(hazard)}"
                  for hazard in report.hazards]
    if tolerance := _tolerance(report):
        lines.append(tolerance)
    if precision := _precision(report):
        lines.append(precision)
    if files := _files(report):
        lines.append(files)
    if pair := _pair(report):
        lines.append(pair)
    if report.saved_reference:
        lines.append(f"reference saved to {report.saved_reference}")
    lines.append(f"verdict: {report.verdict}")
    return "\n".join(lines) + "\n"


def _tolerance(report: SmokeReport) -> str:
    """The rtol and atol applied to each output, and where they came from."""
    from cudalint.runtime.smoke.tolerances import describe

    record = report.identity.get("tolerance")
    if not record:
        return ""
    return f"tolerance: {describe(record, report.extra.get('differences') or ())}"


def _precision(report: SmokeReport) -> str:
    precision = report.environment.get("precision")
    if not precision:
        return ""
    autocast = ", ".join(precision["autocast"]) or "off"
    return (f"precision: default dtype {precision['default_dtype']}, float32 matmul "
            f"{precision['float32_matmul_precision']}, autocast {autocast}")


def _pair(report: SmokeReport) -> str:
    from cudalint.runtime.smoke.fallback_pair import summary

    section = report.extra.get("fallback_pair")
    return summary(section) if section else ""


def _files(report: SmokeReport) -> str:
    """The files the target named: how each was compared, the start of its sha256."""
    files = report.extra.get("artefacts") or []
    return ("files: " + ", ".join(f"{Path(item['path']).name} ({item['compared']}, sha256 "
                                  f"{item['sha256'][:12]})" for item in files)) if files else ""


def _hazard_line(hazard: Hazard) -> str:
    tags = [hazard.kind.value] + (["predicted"] if hazard.predicted else [])
    return f"{hazard.subject} [{', '.join(tags)}] x{hazard.count}: {_detail(hazard)}"


def _detail(hazard: Hazard) -> str:
    return hazard.detail + (f"; at {'; '.join(hazard.where)}" if hazard.where else "")


def _render_rich(report: SmokeReport, stream: TextIO) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(file=stream)
    table = Table(title=escape(f"cudalint smoke {report.target} on {report.device}"))
    for column in ("check", "status", "detail"):
        table.add_column(column, overflow="fold")
    for check in report.checks:
        style = _STYLES[check.status]
        table.add_row(check.name, f"[{style}]{check.status.value}[/]", escape(check.detail))
    console.print(table)
    if report.hazards:
        hazards = Table(title="hazards")
        for column in ("severity", "subject", "kind", "detail"):
            hazards.add_column(column, overflow="fold")
        for hazard in report.hazards:
            style = "bold red" if hazard.severity.value == "error" else "yellow"
            kind = hazard.kind.value + (" (predicted)" if hazard.predicted else "")
            hazards.add_row(f"[{style}]{hazard.severity.value}[/]", escape(hazard.subject), kind,
                            escape(_detail(hazard)))
        console.print(hazards)
    if tolerance := _tolerance(report):
        console.print(escape(tolerance))
    if precision := _precision(report):
        console.print(escape(precision))
    if files := _files(report):
        console.print(escape(files))
    if pair := _pair(report):
        console.print(escape(pair))
    if report.saved_reference:
        console.print(escape(f"reference saved to {report.saved_reference}"))
    style = "bold green" if report.verdict == "pass" else "bold red"
    console.print(f"verdict: [{style}]{report.verdict}[/]")


def write_json(report: SmokeReport, path: str) -> None:
    """Write the report as JSON to `path` (never through a link: WriteError), or to stdout
    for `-`."""
    from cudalint.writing import write_file

    text = json.dumps(report.to_dict(), indent=2, default=str) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        write_file(Path(path), text.encode("utf-8"), overwrite=True)

"""The decision on a terminal and in Markdown (for a lab notebook or a pull request)."""

from __future__ import annotations

import json
import re

from rich.console import Console

from cudalint.report.audit import Effort
from cudalint.report.checklist import Status
from cudalint.report.decision import Decision, Verdict
from cudalint.report.evidence import MACHINE_NOTE, Comparison, SmokeRun

_STYLES = {Verdict.MAC_ALLOWED: "green", Verdict.DUAL_TRACK: "yellow", Verdict.REFUSED: "red"}
_BOXES = {Status.DONE: "[x]", Status.OPEN: "[ ]", Status.FAILED: "[!]", Status.UNCHECKED: "[ ]",
          Status.UNKNOWN: "[?]"}
_SHOWN = 15
_EFFORTS = tuple(effort.value for effort in Effort)
# What a terminal acts on instead of showing: C0 and C1 controls (an escape sequence sets the
# title or clears the screen), DEL, and the bidirectional overrides that reorder what is shown.
_UNSHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown(text: str) -> str:
    """`text` as a terminal shows it, each control character spelled as a Python escape
    (`\\x1b`): evidence names files and targets that its author chose."""
    return _UNSHOWN.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"),
                        text)


class _Shown:
    """A console that prints every line through `shown`, markup off."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def print(self, text: str, style: str | None = None, markup: bool = False) -> None:
        self.console.print(shown(text), style=style, markup=False)


def banner(decision: Decision) -> str:
    """`Decision: HEADLINE`, and when it assumes the fixes: that it holds after them."""
    after = f" — {decision.holds_after}" if decision.holds_after else ""
    return f"Decision: {decision.headline}{after}"


def run_line(run: SmokeRun) -> str:
    """One smoke run: its file, target and device, where and when it ran, whether it is
    current."""
    state = "current" if run.current else f"stale: {'; '.join(run.stale)}"
    result = "passed" if run.passed else "failed"
    return (f"{run.source}: smoke {run.target} on {run.device} {result}; machine: "
            f"{run.machine}; {run.date or 'date not recorded'}; tolerance "
            f"{run.tolerance_text}; {state}")


def comparisons(decision: Decision) -> list[tuple[SmokeRun, Comparison]]:
    """The comparisons of the current runs, with references first."""
    found = [(run, c) for run in decision.current_runs if (c := run.comparison()) is not None]
    return sorted(found, key=lambda pair: pair[1].against != "reference")


def comparison_line(run: SmokeRun, comparison: Comparison) -> str:
    return (f"{run.source}: {run.device} against {comparison.reference}: "
            f"{comparison.status}; largest abs diff {comparison.difference}; tolerance "
            f"{run.tolerance_text}")


def print_terminal(decision: Decision, out: Console | None = None) -> None:
    console = _Shown(out or Console(highlight=False, soft_wrap=True))
    console.print(decision.title, style="bold", markup=False)
    console.print(decision.identity, markup=False)
    console.print(banner(decision), style=f"bold {_STYLES[decision.verdict]}", markup=False)
    console.print(f"Evidence: {decision.evidence.value}: {decision.evidence_note}", markup=False)
    console.print(_effort_line(decision), markup=False)
    if decision.runs:
        console.print(MACHINE_NOTE)
    _section(console, "Smoke runs", [run_line(run) for run in decision.runs])
    _section(console, "Comparisons", [comparison_line(*pair) for pair in comparisons(decision)])
    console.print("Tested:")
    for line in _tested_text(decision):
        console.print(f"  {line}", markup=False)
    _section(console, "Why", [str(reason) for reason in decision.reasons])
    _section(console, "Notes", [str(note) for note in decision.notes])
    console.print("Checklist:")
    for item in decision.checklist:
        console.print(f"  {_BOXES[item.status]} {item.title} ({item.status.value}): "
                      f"{item.evidence}", markup=False)
    _section(console, "Next steps", decision.next_steps, everything=True)


def _tested_text(decision: Decision) -> list[str]:
    """The tested / not-tested table, one question a line and one device a cell."""
    table = decision.tested
    lines = []
    for row in table.rows:
        cells = " | ".join(f"{label}: {row.cells[column].text()}"
                           for column, label in zip(table.columns, table.labels, strict=True))
        lines.append(f"{row.question}: {cells}")
    return lines


def _section(console: _Shown, title: str, lines: list[str], everything: bool = False) -> None:
    if not lines:
        return
    console.print(f"{title}:")
    shown = lines if everything else lines[:_SHOWN]
    for line in shown:
        console.print(f"  - {line}", markup=False)
    if len(lines) > len(shown):
        console.print(f"  ... and {len(lines) - _SHOWN} more (see --output-format json)")


def _effort_line(decision: Decision) -> str:
    effort = decision.effort
    paths = ", ".join(f"{path} {counts['total']}" for path, counts in decision.paths.items())
    return (f"Effort: {effort['fixable']} fixed by --fix, {effort['unsafe-fixable']} more by "
            f"--unsafe-fixes, {effort['by-hand']} to port by hand, {effort['blocker']} "
            f"blocker(s); {effort['guarded']} guarded, {effort['advisory']} advisory. "
            f"Paths: {paths}")


def to_json(decision: Decision) -> str:
    # allow_nan=False: a NaN would be a bare `NaN`, which is no JSON (evidence holds none).
    return json.dumps(decision.to_dict(), indent=2, allow_nan=False) + "\n"


def to_markdown(decision: Decision) -> str:
    lines = [
        f"# {_md(decision.title)}",
        "",
        f"{_md(decision.identity)}",
        "",
        f"**{_md(banner(decision))}**",
        "",
        f"*Evidence: {decision.evidence.value}* — {_md(decision.evidence_note)}",
        "",
        f"{_md(_effort_line(decision))}",
        "",
    ]
    if decision.runs:
        lines += ["## Smoke runs", "", MACHINE_NOTE, "", "| file | target | device | result | "
                  "machine | date | tolerance | current |", "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {_md(run.source)} | {_md(run.target)} | {run.device} | "
                  f"{'pass' if run.passed else 'fail'} | {_md(run.machine)} | "
                  f"{_md(run.date or '?')} | {_md(run.tolerance_text)} | "
                  f"{'yes' if run.current else _md('stale: ' + '; '.join(run.stale))} |"
                  for run in decision.runs]
        lines.append("")
    found = comparisons(decision)
    if found:
        lines += ["## Comparisons", "", "| run | device | reference | result | largest abs diff "
                  "| tolerance |", "|---|---|---|---|---|---|"]
        lines += [f"| {_md(run.source)} | {run.device} | {_md(c.reference)} | {c.status} | "
                  f"{_md(c.difference)} | {_md(run.tolerance_text)} |" for run, c in found]
        lines.append("")
    table = decision.tested
    lines += ["## Tested / not tested", "", "| question | " + " | ".join(table.labels) + " |",
              "|---|" + "---|" * len(table.columns)]
    lines += [f"| {row.question} | " + " | ".join(_md(row.cells[c].text()) for c in table.columns)
              + " |" for row in table.rows]
    lines.append("")
    lines += _md_list("Why", [str(reason) for reason in decision.reasons])
    lines += _md_list("Notes", [str(note) for note in decision.notes])
    lines += ["## Checklist", ""]
    lines += [f"- {'[x]' if item.status is Status.DONE else '[ ]'} **{_md(item.title)}** "
              f"({item.status.value}): {_md(item.evidence)}" for item in decision.checklist]
    lines += ["", "## Where CUDA lives", "", "| path | total | " + " | ".join(_EFFORTS) + " |",
              "|---|---:|" + "---:|" * len(_EFFORTS)]
    for path, counts in decision.paths.items():
        lines.append(f"| {path} | {counts['total']} | "
                     + " | ".join(str(counts.get(e, 0)) for e in _EFFORTS) + " |")
    lines.append("")
    lines += _md_list("Next steps", decision.next_steps)
    return "\n".join(lines).rstrip("\n") + "\n"


def _md_list(title: str, entries: list[str]) -> list[str]:
    if not entries:
        return []
    return [f"## {title}", "", *[f"- {_md(entry)}" for entry in entries], ""]


def _md(text: str) -> str:
    """Keep a message's own markup from breaking the page: pipes split tables, `<` opens HTML."""
    return shown(text).replace("|", "\\|").replace("<", "&lt;")

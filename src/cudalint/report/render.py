"""The decision on a terminal and in Markdown (for a lab notebook or a pull request)."""

from __future__ import annotations

import json

from rich.console import Console

from cudalint.report.audit import Effort
from cudalint.report.checklist import Status
from cudalint.report.decision import Decision, Verdict

_STYLES = {Verdict.MAC_ALLOWED: "green", Verdict.DUAL_TRACK: "yellow", Verdict.REFUSED: "red"}
_BOXES = {Status.DONE: "[x]", Status.OPEN: "[ ]", Status.FAILED: "[!]", Status.UNCHECKED: "[ ]"}
_SHOWN = 15
_EFFORTS = tuple(effort.value for effort in Effort)


def print_terminal(decision: Decision, console: Console | None = None) -> None:
    console = console or Console(highlight=False, soft_wrap=True)
    console.print(f"Decision: {decision.headline}", style=f"bold {_STYLES[decision.verdict]}",
                  markup=False)
    console.print(f"Evidence: {decision.evidence.value}: {decision.evidence_note}", markup=False)
    console.print(_effort_line(decision), markup=False)
    _section(console, "Why", [str(reason) for reason in decision.reasons])
    _section(console, "Notes", [str(note) for note in decision.notes])
    console.print("Checklist:")
    for item in decision.checklist:
        console.print(f"  {_BOXES[item.status]} {item.title} ({item.status.value}): "
                      f"{item.evidence}", markup=False)


def _section(console: Console, title: str, lines: list[str]) -> None:
    if not lines:
        return
    console.print(f"{title}:")
    for line in lines[:_SHOWN]:
        console.print(f"  - {line}", markup=False)
    if len(lines) > _SHOWN:
        console.print(f"  ... and {len(lines) - _SHOWN} more (see --output-format json)")


def _effort_line(decision: Decision) -> str:
    effort = decision.effort
    paths = ", ".join(f"{path} {counts['total']}" for path, counts in decision.paths.items())
    return (f"Effort: {effort['fixable']} fixed by --fix, {effort['unsafe-fixable']} more by "
            f"--unsafe-fixes, {effort['by-hand']} to port by hand, {effort['blocker']} "
            f"blocker(s); {effort['guarded']} guarded, {effort['advisory']} advisory. "
            f"Paths: {paths}")


def to_json(decision: Decision) -> str:
    return json.dumps(decision.to_dict(), indent=2) + "\n"


def to_markdown(decision: Decision) -> str:
    lines = [
        "# cudalint migration decision",
        "",
        f"**Decision: {decision.headline}**",
        "",
        f"*Evidence: {decision.evidence.value}* — {_md(decision.evidence_note)}",
        "",
        f"{_md(_effort_line(decision))}",
        "",
    ]
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
    return "\n".join(lines) + "\n"


def _md_list(title: str, entries: list[str]) -> list[str]:
    if not entries:
        return []
    return [f"## {title}", "", *[f"- {_md(entry)}" for entry in entries], ""]


def _md(text: str) -> str:
    """Keep a message's own markup from breaking the page: pipes split tables, `<` opens HTML."""
    return text.replace("|", "\\|").replace("<", "&lt;")

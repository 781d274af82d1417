"""The decision as one self-contained HTML page for a lab meeting: who and what it is about (the
project, its commit, the date, cudalint's version, each smoke run's machine), the smoke runs and
their comparisons, each run's loss per step and largest difference per output against its
tolerance, what was and was not tested, inline CSS and SVG charts (findings per family by
effort, the effort left), where CUDA lives per directory, the checklist, the next steps and
every finding. No script, no external file; a print stylesheet lays it out on A4."""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from html import escape
from pathlib import PurePosixPath

from cudalint.report.audit import Effort, Item
from cudalint.report.decision import Decision
from cudalint.report.evidence import MACHINE_NOTE
from cudalint.report.pictures import pictures
from cudalint.report.render import banner, comparisons
from cudalint.report.tested import FAIL, NOT_RUN, PASS

COLOURS = {
    Effort.FIXABLE: "#2e7d32", Effort.UNSAFE_FIXABLE: "#9ccc65", Effort.BY_HAND: "#f9a825",
    Effort.BLOCKER: "#c62828", Effort.GUARDED: "#5c6bc0", Effort.ADVISORY: "#9e9e9e",
}
_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222;padding:0 1em}
header{padding:1em 1.2em;border-radius:8px;color:#fff}
.mac-allowed{background:#2e7d32}.dual-track{background:#ef6c00}.mps-refused{background:#c62828}
h1{margin:0 0 .3em;font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%;margin:.5em 0}
th,td{border:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.n{text-align:right}
.done{color:#2e7d32;font-weight:600}.failed{color:#c62828;font-weight:600}
.open{color:#ef6c00;font-weight:600}.unchecked{color:#666;font-weight:600}
.legend span{display:inline-block;margin-right:1em}
.legend i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:middle}
code{background:#f4f4f4;padding:0 .2em}header code{background:rgba(255,255,255,.2)}
td.pass{color:#2e7d32;font-weight:600}td.fail{color:#c62828;font-weight:600}
td.not-run{color:#666}.stale{color:#c62828;font-weight:600}
td small{display:block;color:#555;font-weight:400}
figure{margin:.5em 0}figcaption{font-weight:600}figure svg{margin-right:1em;vertical-align:top}
@media print{
@page{size:A4;margin:14mm 12mm}
body{font-size:9.5pt;max-width:none;margin:0;padding:0;color:#000}
header{color:#000;background:none!important;border:2px solid #000}
header code{background:#eee}
h2{break-after:avoid}tr,svg,figure{break-inside:avoid}thead{display:table-header-group}
table{font-size:8.5pt}svg{max-width:100%;height:auto}
section#findings{break-before:page}
}
"""
_BAR = 420  # px for the longest bar
_ROW = 26


def to_html(decision: Decision) -> str:
    items = decision.audit.items
    body = [
        _header(decision),
        _section("smoke", "Smoke runs", _runs(decision)),
        _section("comparisons", "Comparisons", _comparisons(decision)),
        _section("pictures", "Training and differences", _pictures(decision)),
        _section("tested", "Tested / not tested", _tested(decision)),
        _section("effort", "Effort left", _effort_chart(decision.effort)
                 + f"<p>{_rich(_fix_sentence(decision))}</p>"),
        _section("families", "Findings per family and category",
                 _legend() + _family_chart(items)),
        _section("reasons", "Why", _reasons(decision)),
        _section("checklist", "Checklist", _checklist(decision)),
        _section("next-steps", "Next steps", _next_steps(decision)),
        _section("directories", "Where CUDA lives, per directory", _directories(items)),
        _section("paths", "Per path", _paths(decision.paths)),
        _section("findings", "Every finding", _findings(items)),
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(decision.title)}</title>"
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _header(decision: Decision) -> str:
    return (f'<header id="verdict" class="{decision.verdict.value}" '
            f'data-verdict="{decision.verdict.value}" data-evidence="{decision.evidence.value}">'
            f"<h1>{escape(decision.title)}</h1>"
            f'<p id="identity">{escape(decision.identity)}</p>'
            f'<p id="banner"><strong>{_rich(banner(decision))}</strong></p>'
            f"<p>Evidence: <strong>{decision.evidence.value}</strong> — "
            f"{_rich(decision.evidence_note)}</p></header>")


_CODE = re.compile(r"`([^`]+)`")


def _rich(text: str) -> str:
    """Escaped text whose `backticks` are code."""
    return _CODE.sub(lambda match: f"<code>{match.group(1)}</code>", escape(text, quote=False))


def _runs(decision: Decision) -> str:
    if not decision.runs:
        return "<p>No smoke run given: the decision rests on the static findings.</p>"
    rows = []
    for run in decision.runs:
        state = ("current" if run.current
                 else f'<span class="stale">stale</span>: {_rich("; ".join(run.stale))}')
        rows.append([_td(run.source), _td(run.target), _td(run.device),
                     _td("pass" if run.passed else "fail", "pass" if run.passed else "fail"),
                     _td(run.machine), _td(run.date or "not recorded"),
                     _td(run.tolerance_text),
                     f'<td data-current="{str(run.current).lower()}">{state}</td>'])
    return f'<p class="note">{escape(MACHINE_NOTE)}</p>' + _table(
        "smoke-table", ["file", "target", "device", "result", "machine", "date", "tolerance",
                        "describes the project now"], rows)


def _comparisons(decision: Decision) -> str:
    found = comparisons(decision)
    if not found:
        return "<p>No current run compared its outputs with a reference.</p>"
    rows = [[_td(run.source), _td(run.device),
             f'<td data-reference-device="{escape(c.device)}">{escape(c.reference)}</td>',
             _td(c.status, c.status),
             f'<td data-largest="{escape(c.largest or "")}">{escape(c.difference)}</td>',
             _td(run.tolerance_text)] for run, c in found]
    return _table("comparisons-table", ["run", "ran on", "reference", "result",
                                        "largest abs diff", "tolerance"], rows)


def _pictures(decision: Decision) -> str:
    drawn = pictures([run for run in decision.runs if run.current])
    return drawn or ("<p>No current run recorded a training check's losses or its outputs' "
                     "differences.</p>")


_CELL = {PASS: "pass", FAIL: "fail", NOT_RUN: "not-run"}


def _tested(decision: Decision) -> str:
    table = decision.tested
    rows = []
    for row in table.rows:
        cells = [_td(row.question + (f" ({', '.join(row.checks)})" if row.checks else ""))]
        for column in table.columns:
            cell = row.cells[column]
            small = "; ".join(part for part in (", ".join(cell.sources), cell.tolerance or "",
                                                cell.detail) if part)
            cells.append(f'<td class="{_CELL[cell.status]}" data-column="{column}" '
                         f'data-status="{cell.status}">{escape(cell.status)}'
                         + (f"<small>{_rich(small)}</small>" if small else "") + "</td>")
        rows.append(cells)
    return _table("tested-table", ["question (smoke checks)", *table.labels], rows)


def _next_steps(decision: Decision) -> str:
    items = "".join(f"<li>{_rich(step)}</li>" for step in decision.next_steps)
    return f'<ol id="next-steps-list">{items}</ol>'


def _section(ident: str, title: str, content: str) -> str:
    return f'<section id="{ident}"><h2>{escape(title)}</h2>{content}</section>'


def _fix_sentence(decision: Decision) -> str:
    effort = decision.effort
    return (f"`cudalint check --fix` removes {effort['fixable']} finding(s); "
            f"`--unsafe-fixes` {effort['unsafe-fixable']} more. Left: {effort['by-hand']} to "
            f"port by hand, {effort['blocker']} blocker(s).")


def _legend() -> str:
    spans = "".join(f'<span><i style="background:{colour}"></i>{effort.value}</span>'
                    for effort, colour in COLOURS.items())
    return f'<p class="legend">{spans}</p>'


def _effort_chart(effort: Mapping[str, int]) -> str:
    rows = [(name, {Effort(name): count}) for name, count in effort.items()]
    return _bar_chart("chart-effort", "Effort left", rows, label_width=120)


def _family_chart(items: Iterable[Item]) -> str:
    per_family: dict[str, Counter[Effort]] = defaultdict(Counter)
    for item in items:
        per_family[item.family][item.effort] += 1
    rows = [(family, dict(per_family[family])) for family in sorted(per_family)]
    return _bar_chart("chart-families", "Findings per family, by category", rows, label_width=70)


def _bar_chart(ident: str, title: str, rows: list[tuple[str, dict[Effort, int]]],
               label_width: int) -> str:
    """Horizontal bars, each stacked by effort; one `<rect class="bar">` per non-empty part."""
    if not rows:
        return f'<svg id="{ident}" role="img" width="300" height="24"><title>{title}</title>' \
               '<text x="0" y="16">no findings</text></svg>'
    largest = max(sum(parts.values()) for _, parts in rows) or 1
    width, height = label_width + _BAR + 50, _ROW * len(rows) + 4
    shapes = [f"<title>{escape(title)}</title>"]
    for index, (label, parts) in enumerate(rows):
        y = index * _ROW + 2
        shapes.append(f'<text x="0" y="{y + 16}">{escape(label)}</text>')
        x = float(label_width)
        for effort in COLOURS:
            count = parts.get(effort, 0)
            if not count:
                continue
            length = count / largest * _BAR
            shapes.append(f'<rect class="bar" data-label="{escape(label)}" '
                          f'data-effort="{effort.value}" data-count="{count}" x="{x:.1f}" '
                          f'y="{y}" width="{length:.1f}" height="{_ROW - 6}" '
                          f'fill="{COLOURS[effort]}"><title>{escape(label)}: {count} '
                          f"{effort.value}</title></rect>")
            x += length
        shapes.append(f'<text x="{x + 6:.1f}" y="{y + 16}">{sum(parts.values())}</text>')
    return (f'<svg id="{ident}" role="img" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" font-size="13">' + "".join(shapes) + "</svg>")


def _table(ident: str, header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(cell)}</th>" for cell in header)
    body = "".join("<tr>" + "".join(rows_cell for rows_cell in row) + "</tr>" for row in rows)
    return f'<table id="{ident}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _td(text: object, css: str = "") -> str:
    attribute = f' class="{css}"' if css else ""
    return f"<td{attribute}>{_rich(str(text))}</td>"


def _reasons(decision: Decision) -> str:
    rows = [[_td(reason.where or ""), _td(reason.code or ""), _td(reason.text)]
            for reason in decision.reasons]
    notes = [[_td(note.where or ""), _td(note.code or ""), _td(note.text)]
             for note in decision.notes]
    table = _table("reasons-table", ["where", "code", "reason"], rows)
    return table + (_table("notes-table", ["where", "code", "note"], notes) if notes else "")


def _checklist(decision: Decision) -> str:
    rows = [[_td(item.title), _td(item.status.value, item.status.value), _td(item.evidence)]
            for item in decision.checklist]
    return _table("checklist-table", ["item", "status", "evidence"], rows)


def _directories(items: tuple[Item, ...]) -> str:
    folders = [PurePosixPath(item.where.rpartition(":")[0]).parent for item in items]
    root = PurePosixPath(os.path.commonpath(folders)) if folders else PurePosixPath(".")
    per_dir: dict[str, Counter[Effort]] = defaultdict(Counter)
    for item, folder in zip(items, folders, strict=True):
        per_dir[str(folder.relative_to(root))][item.effort] += 1
    rows = [(folder, dict(per_dir[folder])) for folder in sorted(per_dir)]
    table_rows = [[_td(folder), _td(sum(parts.values()), "n"),
                   *(_td(parts.get(effort, 0), "n") for effort in COLOURS)]
                  for folder, parts in rows]
    widest = max((len(folder) for folder in per_dir), default=1)
    chart = _bar_chart("chart-directories", "Findings per directory", rows,
                       label_width=min(8 * widest + 12, 360))
    return (f"<p>Relative to <code>{escape(str(root))}</code></p>" + chart
            + _table("directories-table", ["directory", "total", *(e.value for e in COLOURS)],
                     table_rows))


def _paths(paths: Mapping[str, Mapping[str, int]]) -> str:
    rows = [[_td(path), _td(counts["total"], "n"),
             *(_td(counts.get(effort.value, 0), "n") for effort in COLOURS)]
            for path, counts in paths.items()]
    return _table("paths-table", ["path", "total", *(e.value for e in COLOURS)], rows)


def _findings(items: tuple[Item, ...]) -> str:
    """One row per finding and line: identical findings on one line are one row."""
    unique = dict.fromkeys((item.where, item.finding.code or "", item.path.value,
                            item.effort.value, item.finding.message) for item in items)
    rows = [[_td(cell) for cell in row] for row in unique]
    return _table("findings-table", ["where", "code", "path", "effort", "message"], rows)

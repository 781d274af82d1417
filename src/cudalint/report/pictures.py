"""Two pictures of a smoke run, as inline SVG (no script, no external file; they print):

- the loss at each step of its training check, with the reference's losses when it carries
  them (`loss-chart-N`: one `polyline` per series, a `circle` per step);
- each compared output's largest absolute difference against its tolerance, on a log scale
  (`difference-chart-N`: a `rect` per output, green within the tolerance, red beyond, and a
  tick at its atol).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from cudalint.report.evidence import SmokeRun

_WIDTH, _HEIGHT, _LEFT, _BOTTOM, _TOP = 460, 190, 64, 30, 14
_HERE, _REFERENCE = "#1565c0", "#9e9e9e"
_WITHIN, _BEYOND = "#2e7d32", "#c62828"
_LOG_LOW, _LOG_HIGH = -12, 1  # the difference axis, in powers of ten
_BAR_LEFT, _BAR_WIDTH, _BAR_ROW = 150, 330, 26


def pictures(runs: Sequence[SmokeRun]) -> str:
    """The pictures of every run that has them, each under its file's name."""
    parts = []
    for index, run in enumerate(runs):
        charts = [chart for chart in (loss_chart(run, index), difference_chart(run, index))
                  if chart]
        if charts:
            parts.append(f"<figure><figcaption>{escape(run.source)}: {escape(run.target)} on "
                         f"{escape(run.device)}</figcaption>{''.join(charts)}</figure>")
    return "".join(parts)


def _numbers(values: Any) -> list[float | None]:
    if not isinstance(values, list):
        return []
    found: list[float | None] = []
    for value in values:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        found.append(number if math.isfinite(number) else None)
    return found


def loss_chart(run: SmokeRun, index: int) -> str:
    here = _numbers(run.training.get("losses"))
    reference = _numbers(run.training.get("reference_losses"))
    known = [value for value in (*here, *reference) if value is not None]
    if not known:
        return ""
    low, high = min(known), max(known)
    if high == low:
        low, high = low - 0.5, high + 0.5
    steps = max(len(here), len(reference))

    def point(step: int, value: float) -> tuple[float, float]:
        x = _LEFT + (step / max(steps - 1, 1)) * (_WIDTH - _LEFT - 16)
        y = _TOP + (high - value) / (high - low) * (_HEIGHT - _TOP - _BOTTOM)
        return round(x, 1), round(y, 1)

    shapes = [_axes(f"{high:.4g}", f"{low:.4g}", steps)]
    for name, series, colour in (("reference", reference, _REFERENCE), ("this run", here, _HERE)):
        known_steps = [(step, value) for step, value in enumerate(series) if value is not None]
        if not known_steps:
            continue
        points = [point(step, value) for step, value in known_steps]
        line = " ".join(f"{x},{y}" for x, y in points)
        shapes.append(f'<polyline data-series="{name}" points="{line}" fill="none" '
                      f'stroke="{colour}" stroke-width="2"/>')
        shapes += [f'<circle cx="{x}" cy="{y}" r="3" fill="{colour}"><title>{name}, step '
                   f"{step + 1}: {value:.6g}</title></circle>"
                   for (x, y), (step, value) in zip(points, known_steps, strict=True)]
    legend = [("this run", _HERE)] + ([("reference", _REFERENCE)] if reference else [])
    shapes += [f'<text x="{_WIDTH - 150}" y="{16 + 16 * i}" fill="{colour}">— {name}</text>'
               for i, (name, colour) in enumerate(legend)]
    title = (f"loss per step of {run.target} on {run.device}: "
             + " → ".join("?" if v is None else f"{v:.4g}" for v in here))
    return _svg(f"loss-chart-{index}", title, _WIDTH, _HEIGHT, shapes,
                steps=str(len(here)), reference=str(len(reference)))


def _axes(high: str, low: str, steps: int) -> str:
    bottom = _HEIGHT - _BOTTOM
    return (f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{bottom}" stroke="#555"/>'
            f'<line x1="{_LEFT}" y1="{bottom}" x2="{_WIDTH - 10}" y2="{bottom}" stroke="#555"/>'
            f'<text x="{_LEFT - 6}" y="{_TOP + 10}" text-anchor="end">{escape(high)}</text>'
            f'<text x="{_LEFT - 6}" y="{bottom}" text-anchor="end">{escape(low)}</text>'
            f'<text x="{_LEFT}" y="{_HEIGHT - 8}">step 1</text>'
            f'<text x="{_WIDTH - 16}" y="{_HEIGHT - 8}" text-anchor="end">step {steps}</text>'
            f'<text x="4" y="{(_TOP + bottom) // 2}">loss</text>')


def difference_chart(run: SmokeRun, index: int) -> str:
    rows = [row for row in run.differences if isinstance(row.get("output"), str)]
    if not rows:
        return ""
    height = 46 + _BAR_ROW * len(rows)
    shapes = [_scale(height)]
    for number, row in enumerate(rows):
        shapes.append(_difference_bar(row, 36 + number * _BAR_ROW))
    title = f"largest difference per output against its tolerance, {run.target} on {run.device}"
    shapes.append('<text x="4" y="11" font-size="10">largest abs diff (log); '
                  'tick: atol</text>')
    return _svg(f"difference-chart-{index}", title, _BAR_LEFT + _BAR_WIDTH + 250, height, shapes,
                outputs=str(len(rows)))


def _x(value: float) -> float:
    """A difference's place on the log axis (0 at its left edge)."""
    if value <= 0:
        return float(_BAR_LEFT)
    power = min(max(math.log10(value), _LOG_LOW), _LOG_HIGH)
    return round(_BAR_LEFT + (power - _LOG_LOW) / (_LOG_HIGH - _LOG_LOW) * _BAR_WIDTH, 1)


def _scale(height: int) -> str:
    ticks = []
    for power in range(_LOG_LOW, _LOG_HIGH + 1, 3):
        x = _x(10.0 ** power)
        ticks.append(f'<line x1="{x}" y1="28" x2="{x}" y2="{height - 4}" stroke="#eee"/>'
                     f'<text x="{x}" y="25" text-anchor="middle" font-size="10">1e{power}</text>')
    return "".join(ticks)


def _difference_bar(row: Mapping[str, Any], y: int) -> str:
    output = escape(str(row["output"]))
    largest = row.get("max_abs")
    atol, rtol = row.get("atol"), row.get("rtol")
    within = bool(row.get("within"))
    colour = _WITHIN if within else _BEYOND
    value = _difference(largest)
    end = _x(value)
    bar = (f'<rect data-output="{output}" data-within="{str(within).lower()}" '
           f'data-largest="{value:g}" x="{_BAR_LEFT}" y="{y}" width="{round(end - _BAR_LEFT, 1)}"'
           f' height="16" fill="{colour}"><title>{output}: largest abs diff {value:.3g}'
           f"{_limits(rtol, atol)}</title></rect>")
    label = f'<text x="{_BAR_LEFT - 6}" y="{y + 12}" text-anchor="end">{output}</text>'
    tick = ""
    if isinstance(atol, (int, float)) and atol > 0:
        x = _x(float(atol))
        tick = (f'<line data-atol="{atol:g}" x1="{x}" y1="{y - 3}" x2="{x}" y2="{y + 19}" '
                f'stroke="#000" stroke-width="2"/>')
    text = (f'<text x="{_BAR_LEFT + _BAR_WIDTH + 6}" y="{y + 12}" fill="{colour}">'
            f'{"identical" if value == 0 else f"{value:.2g}"}{" ≤ " if within else " > "}'
            f'{_short_limits(rtol, atol)}</text>')
    return label + bar + tick + text


def _difference(largest: object) -> float:
    """A row's largest difference: a number, or smoke's text for one JSON cannot hold ('inf';
    a NaN is drawn as the axis's end too); none recorded draws as none."""
    if isinstance(largest, str):
        try:
            value = float(largest)
        except ValueError:
            return 0.0
        return math.inf if math.isnan(value) else value
    return float(largest) if isinstance(largest, (int, float)) else 0.0


def _limits(rtol: object, atol: object) -> str:
    if not isinstance(atol, (int, float)) or not isinstance(rtol, (int, float)):
        return " (compared exactly)"
    return f", tolerance atol {atol:g} + rtol {rtol:g}·|reference|"


def _short_limits(rtol: object, atol: object) -> str:
    if not isinstance(atol, (int, float)) or not isinstance(rtol, (int, float)):
        return "exact"
    return f"atol {atol:g}, rtol {rtol:g}"


def _svg(ident: str, title: str, width: int, height: int, shapes: list[str],
         **data: str) -> str:
    attributes = "".join(f' data-{key}="{escape(value)}"' for key, value in data.items())
    return (f'<svg id="{ident}" role="img" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" font-size="12"{attributes}><title>{escape(title)}</title>'
            + "".join(shapes) + "</svg>")

"""The report on a terminal (rich) and piped (plain)."""

from __future__ import annotations

import io

from cudalint.runtime.smoke.render import plain, render
from cudalint.runtime.smoke.report import (
    Check,
    Hazard,
    HazardKind,
    Severity,
    SmokeReport,
    Status,
)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _report() -> SmokeReport:
    return SmokeReport(
        target="train.py:step", device="mps",
        checks=[Check("run", Status.PASS, "step(mps) returned 2 output(s)"),
                Check("compare", Status.FAIL, "state['fc.weight']: max abs diff 0.5 at [0, 1]")],
        hazards=[Hazard(HazardKind.CPU_FALLBACK, Severity.ERROR, "ran on the CPU",
                        op="aten::linalg_eig")],
    )


def test_plain_when_piped() -> None:
    stream = io.StringIO()
    render(_report(), stream)
    assert stream.getvalue() == plain(_report())
    assert stream.getvalue().splitlines() == [
        "cudalint smoke train.py:step on mps",
        "  PASS     run          step(mps) returned 2 output(s)",
        "  FAIL     compare      state['fc.weight']: max abs diff 0.5 at [0, 1]",
        "hazards:",
        "  ERROR    aten::linalg_eig [cpu-fallback] x1: ran on the CPU",
        "verdict: fail",
    ]


def test_rich_table_on_a_terminal_keeps_brackets() -> None:
    stream = Terminal()
    render(_report(), stream)
    text = stream.getvalue()
    assert "┃" in text or "│" in text  # a table
    assert "state['fc.weight']" in text
    assert "[0, 1]" in text
    assert "aten::linalg_eig" in text
    assert "verdict:" in text and "fail" in text

"""On a Mac, the run is a pair: PYTORCH_ENABLE_MPS_FALLBACK=0 first (normal mode: an op without an
MPS kernel raises NotImplementedError), then =1 (diagnostic mode: each such op runs on the CPU).
The report is the first run's (the second's with --allow-fallback), with a `fallback_pair`
section: what each run showed, and each op that fell back with the line of the user's code
where it first ran (the Python stack the op audit saw as the op was dispatched)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cudalint.runtime.smoke.scoped_env import scoped_env

VARIABLE = "PYTORCH_ENABLE_MPS_FALLBACK"
MODES = ("0", "1")  # normal, then diagnostic


def run_pair(run: Callable[[], Any]) -> tuple[Any, Any]:
    """`run()` once with the fallback off, once with it on (the child inherits the variable)."""
    results = []
    for value in MODES:
        with scoped_env(VARIABLE, value):
            results.append(run())
    return results[0], results[1]


def pair_section(off: dict[str, Any] | None, on: dict[str, Any] | None) -> dict[str, Any]:
    """The report's `fallback_pair`, from the two runs' reports (None: the run wrote none)."""
    return {"off": _mode(off, "no-mps-kernel"), "on": _mode(on, "cpu-fallback")}


def _mode(report: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    if report is None:
        return {"verdict": "fail", "ops": [], "error": "the run wrote no report"}
    ops = [{"op": hazard.get("op"), "count": hazard.get("count"),
            "where": (hazard.get("where") or [None])[0]}
           for hazard in report.get("hazards", [])
           if hazard.get("kind") == kind and not hazard.get("predicted")]
    error = report.get("error") or {}
    seen = (report.get("environment") or {}).get(VARIABLE) or {}
    return {"verdict": report.get("verdict"), "value_torch_saw": seen.get("value_torch_saw"),
            "ops": ops,
            "error": (f"{error.get('error_type')}: {error.get('message')}"
                      + (f" at {error['location']}" if error.get("location") else "")
                      if error else None)}


def summary(section: dict[str, Any]) -> str:
    """One line for the terminal."""
    parts = []
    for mode, label in (("off", f"{VARIABLE}=0"), ("on", f"{VARIABLE}=1")):
        facts = section[mode]
        ops = "; ".join(f"{op['op']} x{op['count']} at {op['where'] or '?'}" for op in facts["ops"])
        verb = "raised" if mode == "off" else "fell back"
        parts.append(f"{label}: {facts['verdict']}" + (f", {verb}: {ops}" if ops else ""))
    return "fallback pair: " + "; ".join(parts)

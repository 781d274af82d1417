"""The tolerance a run applied, in words, with its numbers and where they came from: the same
text in smoke's summary and in the report's sheet. Standard library only (the report reads
smoke files without torch).

A value left to the per-dtype default is still a number (float32: rtol 1.3e-06, atol 1e-05);
each compared output's own pair is in the report's `differences`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cudalint.runtime.smoke.compare import Tolerance

DEFAULT = "default"
COMMAND_LINE = "command line"
PYPROJECT = "[tool.cudalint.smoke]"
_SHOWN = 4


def declared_first(record: Mapping[str, Any]) -> bool:
    """Whether the tolerance was declared in the project before the run: in
    [tool.cudalint.smoke] of a pyproject.toml committed, unchanged, at the run's commit."""
    return record.get("source") == PYPROJECT and record.get("committed") is True


def source_text(record: Mapping[str, Any]) -> str:
    source = record.get("source")
    if source == DEFAULT:
        return "defaulted per dtype: no [tool.cudalint.smoke] declares one"
    if source == COMMAND_LINE:
        return "given on the command line"
    if source == PYPROJECT:
        committed = record.get("committed")
        return ("declared in [tool.cudalint.smoke] at the run's commit" if committed
                else "declared in [tool.cudalint.smoke], not committed before the run"
                if committed is False else "declared in [tool.cudalint.smoke], not in git")
    return str(source) if source else "source not recorded"


def applied_text(record: Mapping[str, Any], differences: Iterable[Mapping[str, Any]]) -> str:
    """`rtol=1.3e-06, atol=1e-05 (loss, logits)`: each pair applied, with its outputs; without
    compared outputs, the pair a float32 output gets."""
    pairs: dict[tuple[float, float], list[str]] = {}
    for row in differences:
        rtol, atol = row.get("rtol"), row.get("atol")
        if isinstance(rtol, (int, float)) and isinstance(atol, (int, float)):
            pairs.setdefault((float(rtol), float(atol)), []).append(str(row.get("output")))
    if pairs:
        return "; ".join(f"rtol={rtol:g}, atol={atol:g} ({_outputs(names)})"
                         for (rtol, atol), names in pairs.items())
    rtol, atol = _own(record).for_dtypes("float32")
    per_output = record.get("per_output") or {}
    extra = f"; per output: {', '.join(sorted(per_output))}" if per_output else ""
    return f"rtol={rtol:g}, atol={atol:g} (float32 outputs){extra}"


def describe(record: Mapping[str, Any], differences: Iterable[Mapping[str, Any]] = ()) -> str:
    """The numbers applied and their source, in one line."""
    if not record:
        return "tolerance not recorded"
    return f"{applied_text(record, differences)}; {source_text(record)}"


def _own(record: Mapping[str, Any]) -> Tolerance:
    rtol, atol = record.get("rtol"), record.get("atol")
    return Tolerance(rtol=float(rtol) if isinstance(rtol, (int, float)) else None,
                     atol=float(atol) if isinstance(atol, (int, float)) else None)


def _outputs(names: list[str]) -> str:
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more

"""The tolerance in the report: with its numbers and source, and the checklist's tolerance item
checked only for one declared in the project before the run."""

from __future__ import annotations

import pytest

from cudalint.report.audit import Audit
from cudalint.report.checklist import build_checklist
from cudalint.report.evidence import run_from_dict
from cudalint.runtime.smoke.tolerances import describe

from .smoke_runs import CUDA_REFERENCE, smoke_json

TITLE = "Important outputs compared within the study's tolerance"
DECLARED = {"rtol": 1e-4, "atol": 1e-5, "source": "[tool.cudalint.smoke]", "per_output": {}}


def _item(tolerance: dict[str, object]):
    run = run_from_dict(smoke_json("mps", against=CUDA_REFERENCE, tolerance=tolerance),
                        "smoke-mps.json")
    return next(item for item in build_checklist(Audit(()), [run]) if item.title == TITLE)


@pytest.mark.parametrize(("tolerance", "status"), [
    ({"rtol": None, "atol": None, "source": "default", "per_output": {}}, "unchecked"),
    ({"rtol": 1e-4, "atol": 1e-5, "source": "command line", "per_output": {}}, "unchecked"),
    ({**DECLARED, "committed": False}, "unchecked"),
    ({**DECLARED, "committed": None}, "unchecked"),
    ({**DECLARED, "committed": True}, "done"),
])
def test_the_tolerance_item_needs_a_declaration_committed_before_the_run(
        tolerance: dict[str, object], status: str) -> None:
    item = _item(tolerance)
    assert item.status.value == status, item.evidence
    if status == "unchecked":
        assert "put it in [tool.cudalint.smoke] in pyproject.toml, commit" in item.evidence


def test_defaults_are_numbers_with_their_source() -> None:
    default = {"rtol": None, "atol": None, "source": "default", "per_output": {}}
    assert describe(default) == ("rtol=1.3e-06, atol=1e-05 (float32 outputs); defaulted per "
                                 "dtype: no [tool.cudalint.smoke] declares one")
    differences = [{"output": "loss", "rtol": 1.3e-06, "atol": 1e-05},
                   {"output": "logits", "rtol": 1.3e-06, "atol": 1e-05},
                   {"output": "step", "rtol": 0.0, "atol": 0.0}]
    assert describe({**DECLARED, "committed": True}, differences) == (
        "rtol=1.3e-06, atol=1e-05 (loss, logits); rtol=0, atol=0 (step); declared in "
        "[tool.cudalint.smoke] at the run's commit")

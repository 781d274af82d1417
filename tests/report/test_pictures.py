"""The sheet's pictures: a run's loss per step (and its reference's), and each output's largest
difference against its tolerance, as inline SVG."""

from __future__ import annotations

import re

from cudalint.report.evidence import run_from_dict
from cudalint.report.pictures import difference_chart, loss_chart, pictures

from .smoke_runs import smoke_json


def _run(**sections: object):
    data = smoke_json("mps")
    data.update(sections)
    return run_from_dict(data, "smoke-mps.json")


def test_the_loss_per_step_beside_the_reference() -> None:
    run = _run(training={"losses": [2.3, 1.9, 1.4, "nan"],
                         "reference_losses": [2.3, 1.9, 1.5, 1.1]})
    svg = loss_chart(run, 0)
    series = dict(re.findall(r'<polyline data-series="([^"]+)" points="([^"]+)"', svg))
    assert len(series["reference"].split()) == 4
    assert len(series["this run"].split()) == 3  # NaN is not drawn
    # The highest loss at the top, the lowest at the bottom of the plot.
    heights = [float(point.split(",")[1]) for point in series["reference"].split()]
    assert heights == sorted(heights)
    assert "<title>this run, step 3: 1.4</title>" in svg
    assert 'data-steps="4" data-reference="4"' in svg


def test_each_output_against_its_tolerance() -> None:
    run = _run(differences=[
        {"output": "loss", "rtol": 1.3e-06, "atol": 1e-05, "max_abs": 4e-7, "within": True},
        {"output": "logits", "rtol": 1.3e-06, "atol": 1e-05, "max_abs": 3e-3, "within": False},
        {"output": "step", "rtol": None, "atol": None, "max_abs": None, "within": True}])
    svg = difference_chart(run, 1)
    bars = dict(re.findall(r'<rect data-output="([^"]+)" data-within="(\w+)"', svg))
    assert bars == {"loss": "true", "logits": "false", "step": "true"}
    widths = dict(re.findall(r'data-output="([^"]+)"[^>]* width="([\d.]+)"', svg))
    assert float(widths["logits"]) > float(widths["loss"]) > float(widths["step"]) == 0
    assert svg.count('<line data-atol="1e-05"') == 2
    assert "0.003 > atol 1e-05, rtol 1.3e-06" in svg


def test_a_run_without_them_draws_nothing_and_nothing_is_scripted() -> None:
    assert pictures([_run()]) == ""
    page = pictures([_run(training={"losses": [1.0, 0.5]}, differences=[
        {"output": "<b>", "rtol": 0.0, "atol": 0.0, "max_abs": 0.0, "within": True}])])
    assert "<script" not in page and "<b>" not in page and "&lt;b&gt;" in page

"""Leaf-by-leaf comparison, and flattening outputs into named leaves."""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from cudalint.runtime.smoke.compare import EXACT, Tolerance, compare_outputs
from cudalint.runtime.smoke.outputs import Leaf, UnsupportedOutput, flatten

DEFAULT = Tolerance()


def _differences(got: object, want: object, tolerance: Tolerance = DEFAULT) -> list[str]:
    return [str(d) for d in compare_outputs(flatten(got), flatten(want), tolerance)]


def test_leaves_are_named_by_path() -> None:
    state = OrderedDict([("fc.weight", torch.ones(2)), ("fc.bias", torch.zeros(1))])
    output = {"loss": torch.tensor(1.0), "state": state, "history": [0.5, (1, None)],
              "tag": "run", 3: torch.ones(1)}
    assert [leaf.path for leaf in flatten(output)] == [
        "loss", "state['fc.weight']", "state['fc.bias']", "history[0]", "history[1][0]",
        "history[1][1]", "tag", "[3]"]


def test_module_stands_for_its_state_dict() -> None:
    module = torch.nn.Linear(2, 1)
    assert [leaf.path for leaf in flatten(module)] == [
        "state_dict['weight']", "state_dict['bias']"]
    assert [leaf.path for leaf in flatten({"model": module})] == [
        "model['weight']", "model['bias']"]


def test_plain_values_and_numpy() -> None:
    @dataclass
    class Result:
        score: float
        counts: np.ndarray

    leaves = flatten(Result(score=np.float32(0.5), counts=np.arange(3)))  # type: ignore[arg-type]
    assert [leaf.path for leaf in leaves] == ["score", "counts"]
    assert isinstance(leaves[1].value, torch.Tensor)
    assert flatten(torch.ones(2))[0].path == "output"
    assert flatten([torch.ones(1)])[0].path == "output[0]"


def test_snapshots_are_copies() -> None:
    tensor = torch.zeros(2, requires_grad=True)
    leaf = flatten(tensor)[0]
    with torch.no_grad():
        tensor += 1
    assert leaf.value.tolist() == [0.0, 0.0]  # type: ignore[union-attr]
    assert not leaf.value.requires_grad  # type: ignore[union-attr]


def test_unsupported_output_names_the_path() -> None:
    with pytest.raises(UnsupportedOutput, match=r"output extra\['handle'\] is a object"):
        flatten({"extra": {"handle": object()}})


def test_equal_outputs_have_no_differences() -> None:
    output = {"x": torch.randn(3, 3), "n": 2, "f": 0.25, "s": "ok", "z": None}
    assert _differences(output, output) == []


def test_float32_tolerance_is_assert_close_default() -> None:
    base = torch.ones(4)
    assert _differences(base + 5e-6, base) == []  # within atol=1e-5
    problems = _differences(base + 1e-4, base)
    assert problems == ["output: 4 of 4 elements differ beyond rtol=1.3e-06, atol=1e-05; max abs "
                        "diff 0.0001 at [0] (1.0001 vs 1), max rel diff 0.0001"]


def test_bfloat16_tolerance_is_looser() -> None:
    base = torch.ones(4, dtype=torch.bfloat16)
    assert _differences(base + 0.0078125, base) == []


def test_user_tolerance_overrides_one_default() -> None:
    base = torch.ones(3)
    assert _differences(base + 1e-4, base, Tolerance(atol=1e-3)) == []
    assert _differences(base + 1e-4, base, Tolerance(rtol=1e-3)) == []


def test_shape_dtype_and_structure() -> None:
    assert _differences({"a": torch.ones(2)}, {"a": torch.ones(3)}) == [
        "a: shape (2,) here, (3,) in the reference"]
    assert _differences({"a": torch.ones(2, dtype=torch.float16)}, {"a": torch.ones(2)}) == [
        "a: dtype float16 here, float32 in the reference"]
    assert _differences({"a": 1, "b": 2}, {"a": 1, "c": 2}) == [
        "c: missing here, present in the reference", "b: present here, not in the reference"]
    assert _differences({"a": torch.ones(1)}, {"a": 1.0}) == [
        "a: a tensor here, a number in the reference"]


def test_integers_are_exact_even_beyond_float64_precision() -> None:
    big = torch.tensor([2**60], dtype=torch.int64)
    assert len(_differences(big + 1, big)) == 1
    assert _differences({"n": 3}, {"n": 4}) != []


def test_nan_positions_must_agree() -> None:
    nan = torch.tensor([1.0, math.nan])
    assert _differences(nan, nan.clone()) == []
    assert _differences({"f": math.nan}, {"f": math.nan}) == []
    assert _differences({"f": complex(math.nan, 1.0)}, {"f": complex(math.nan, 1.0)}) == []


# Whatever the tolerance: NaN is never "close" to a number.
NAN_TOLERANCES = (DEFAULT, Tolerance(rtol=math.inf, atol=math.inf))


@pytest.mark.parametrize("side", ["run", "reference"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64,
                                   torch.complex64], ids=str)
def test_nan_on_either_side_is_a_difference(side: str, dtype: torch.dtype) -> None:
    """NaN in the run checked where the reference has a number is the typical MPS failure; it
    fails as surely as NaN in the reference alone, and the message says where."""
    numbers = torch.tensor([[1.0, 2.0], [3.0, 4.0]]).to(dtype)
    with_nan = numbers.clone()
    with_nan[1, 0] = math.nan
    got, want = (with_nan, numbers) if side == "run" else (numbers, with_nan)
    nan, three = ("nan+0j", "3+0j") if dtype.is_complex else ("nan", "3")
    values = f"{nan} vs {three}" if side == "run" else f"{three} vs {nan}"
    for tolerance in NAN_TOLERANCES:
        problems = _differences({"loss": got}, {"loss": want}, tolerance)
        assert len(problems) == 1, tolerance
        assert problems[0].startswith("loss: 1 of 4 elements differ beyond")
        assert problems[0].endswith(
            f"; NaN in one but not the other at 1 elements, the first at [1, 0] ({values})")


def test_a_run_that_is_all_nan_fails() -> None:
    """A diverged step: every output element NaN; the reference finite."""
    problems = _differences(torch.full((2, 3), math.nan), torch.ones(2, 3))
    assert problems == ["output: 6 of 6 elements differ beyond rtol=1.3e-06, atol=1e-05; NaN in "
                        "one but not the other at 6 elements, the first at [0, 0] (nan vs 1)"]


def test_nan_beside_a_numeric_difference_names_both() -> None:
    problems = _differences(torch.tensor([1.0, math.nan, 5.0]), torch.tensor([1.0, 2.0, 3.0]))
    assert problems == ["output: 2 of 3 elements differ beyond rtol=1.3e-06, atol=1e-05; max abs "
                        "diff 2 at [2] (5 vs 3), max rel diff 0.6667; NaN in one but not the "
                        "other at 1 elements, the first at [1] (nan vs 2)"]


@pytest.mark.parametrize("side", ["run", "reference"])
@pytest.mark.parametrize("nan", [math.nan, complex(math.nan, 0.0), complex(0.0, math.nan),
                                 np.float32("nan")], ids=repr)
def test_nan_number_on_either_side_is_a_difference(side: str, nan: object) -> None:
    """A returned Python or NumPy number (a loss, a metric) that is NaN on one side only."""
    got, want = ({"loss": nan}, {"loss": 0.5}) if side == "run" else ({"loss": 0.5}, {"loss": nan})
    for tolerance in NAN_TOLERANCES:
        problems = _differences(got, want, tolerance)
        assert len(problems) == 1 and problems[0].startswith("loss: "), tolerance
        here, _, rest = problems[0].partition(" here, ")
        reference = rest.partition(" in the reference")[0]
        assert ("nan" in here, "nan" in reference) == (side == "run", side == "reference")


def test_infinities_equal_themselves() -> None:
    inf = torch.tensor([math.inf, -math.inf, 0.0])
    assert _differences(inf, inf.clone()) == []


def test_complex_values() -> None:
    z = torch.tensor([1 + 1j, 2 - 1j], dtype=torch.complex64)
    assert _differences(z, z.clone()) == []
    assert len(_differences(z + 0.1j, z)) == 1


def test_exact_reports_any_difference() -> None:
    leaves = [Leaf("x", torch.tensor([1.0]))]
    close = [Leaf("x", torch.tensor([1.0 + 1e-7]))]
    assert compare_outputs(close, leaves, Tolerance()) == []
    (difference,) = compare_outputs(close, leaves, EXACT)
    assert difference.max_abs == pytest.approx(1.19e-7, rel=0.01)


def test_zero_dim_and_empty_tensors() -> None:
    assert _differences(torch.tensor(1.5), torch.tensor(1.5)) == []
    assert "at []" in _differences(torch.tensor(2.0), torch.tensor(1.5))[0]
    assert _differences(torch.zeros(0, 3), torch.zeros(0, 3)) == []


def test_two_dtypes_are_compared_at_the_looser_tolerance() -> None:
    """float16 here, float32 in the reference: the dtypes differ (reported), and the values
    are held to float16's rtol (1e-3), not float32's (1.3e-6)."""
    got, want = torch.tensor([1.0], dtype=torch.float16), torch.tensor([1.0004])
    found = compare_outputs(flatten(got), flatten(want), DEFAULT)
    assert [d.reason for d in found] == ["dtype"]


def test_a_float_against_an_int_reference_is_within_tolerance() -> None:
    assert _differences(1.00000001, 1) == []
    assert _differences(1, 1.00000001) == []
    assert len(_differences(3, 4)) == 1  # two ints: exact
    assert len(_differences(1.1, 1)) == 1


def test_a_per_output_tolerance_covers_the_outputs_indexed_leaves() -> None:
    loose = Tolerance(per_output={"model": Tolerance(rtol=0.1, atol=0.1)})
    got = {"model": {"weight": torch.tensor([1.05])}, "loss": torch.tensor(1.05)}
    want = {"model": {"weight": torch.tensor([1.0])}, "loss": torch.tensor(1.0)}
    assert [d.split(":")[0] for d in _differences(got, want, loose)] == ["loss"]
    assert len(_differences(got, want)) == 2


def test_a_passing_compare_states_the_most_its_tolerance_allowed_there() -> None:
    """The report refuses a pass whose largest difference is above this (issue 39): it must
    never be below what the comparison really allowed (the output's own tolerance, the largest
    finite |reference|, an infinity ignored, the looser of two dtypes)."""
    from cudalint.runtime.smoke.checks import _allowed, reference_check
    from cudalint.runtime.smoke.identity import LARGEST

    want = torch.tensor([1000.0, -2.0, math.inf])
    got = torch.tensor([1000.5, -2.0, math.inf])
    tolerance = Tolerance(per_output={"logits": Tolerance(rtol=1e-3)})
    check = reference_check([Leaf("logits", got)], [Leaf("logits", want)], tolerance, "cpu")
    assert check.status.value == "pass", check.detail
    assert check.detail.endswith("largest abs diff 0.5 (logits), at most 1 allowed there")
    found = LARGEST.search(check.detail)
    assert found is not None
    assert (found["value"], found["output"], found["allowed"]) == ("0.5", "logits", "1")
    # float16 against float32: float16's rtol (1e-3), not float32's (1.3e-6)
    allowed = _allowed(torch.tensor([3.0]).half(), torch.tensor([3.001]), Tolerance())
    assert allowed == pytest.approx(1e-5 + 1e-3 * 3.001)
    assert _allowed(2.0, 4.0, Tolerance(rtol=0.5, atol=0.0)) == 2.0
    assert _allowed("a", "a", Tolerance()) is None


def test_the_differences_hold_no_number_json_cannot_write() -> None:
    """An infinite difference (and the NaN its relative difference is) is written as text, as
    the training's losses are: the smoke file stays JSON and the report reads it."""
    import json

    from cudalint.runtime.smoke.compare import measure

    rows = measure(flatten({"x": torch.tensor([math.inf, 1.0]), "y": torch.ones(2)}),
                   flatten({"x": torch.tensor([1.0, math.inf]), "y": torch.ones(2)}), DEFAULT)
    assert [(row["output"], row["max_abs"], row["max_rel"], row["within"]) for row in rows] == [
        ("x", "inf", "nan", False), ("y", 0.0, 0.0, True)]
    json.dumps(rows, allow_nan=False)

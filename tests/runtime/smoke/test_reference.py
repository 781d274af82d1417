"""Saved references: everything round-trips, nothing is unpickled, foreign files are refused."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from cudalint.runtime.smoke.compare import EXACT, compare_outputs
from cudalint.runtime.smoke.errors import HarnessError
from cudalint.runtime.smoke.outputs import flatten
from cudalint.runtime.smoke.reference import load_reference, save_reference

ENVIRONMENT = {"device": "cuda:0", "device_name": "NVIDIA H200", "torch": "2.13.0", "os": "Linux"}


def _round_trip(tmp_path: Path, output: object) -> tuple[list, list]:
    leaves = flatten(output)
    path = tmp_path / "ref.safetensors"
    save_reference(path, leaves, target="train:step", target_text="train.py:step",
                   environment=ENVIRONMENT)
    return leaves, load_reference(path).leaves


def test_tensors_of_every_dtype_round_trip(tmp_path: Path) -> None:
    output = {
        "bf16": torch.randn(3, 2).to(torch.bfloat16),
        "f8": torch.randn(4).to(torch.float8_e4m3fn),
        "f16": torch.randn(2).half(),
        "f64": torch.randn(2, dtype=torch.float64),
        "c64": torch.randn(2, dtype=torch.complex64),
        "c128": torch.randn(2, 2, dtype=torch.complex128),
        "int": torch.arange(4),
        "bool": torch.tensor([True, False]),
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0, 2),
        "strided": torch.arange(6.0).reshape(2, 3).T,
    }
    saved, loaded = _round_trip(tmp_path, output)
    assert compare_outputs(loaded, saved, EXACT) == []
    assert [leaf.value.dtype for leaf in loaded] == [leaf.value.dtype for leaf in saved]


def test_shared_storage_is_saved(tmp_path: Path) -> None:
    weight = torch.randn(2, 2)
    saved, loaded = _round_trip(tmp_path, {"encoder": weight, "decoder": weight})
    assert compare_outputs(loaded, saved, EXACT) == []


def test_plain_values_round_trip(tmp_path: Path) -> None:
    output = {"loss": 0.125, "nan": math.nan, "inf": -math.inf, "steps": 7, "ok": True,
              "z": 1 - 2j, "name": "resnet", "none": None, "nested": [1, [2.5]]}
    saved, loaded = _round_trip(tmp_path, output)
    assert compare_outputs(loaded, saved, EXACT) == []
    assert [type(leaf.value) for leaf in loaded] == [type(leaf.value) for leaf in saved]


def test_metadata_records_target_and_environment(tmp_path: Path) -> None:
    path = tmp_path / "ref.safetensors"
    save_reference(path, flatten({"x": torch.ones(1)}), target="train:step",
                   target_text="src/train.py:step", environment=ENVIRONMENT,
                   random_ops=("aten::randn",))
    reference = load_reference(path)
    assert reference.random_ops == ("aten::randn",)
    assert reference.device_type == "cuda"
    assert reference.target == "train:step"
    assert reference.target_text == "src/train.py:step"
    assert reference.environment == ENVIRONMENT
    assert reference.origin().startswith("cuda:0 (NVIDIA H200), torch 2.13.0, Linux, saved ")


def test_plain_safetensors_file_is_not_a_reference(tmp_path: Path) -> None:
    path = tmp_path / "weights.safetensors"
    save_file({"w": torch.ones(1)}, str(path))
    with pytest.raises(HarnessError, match="is not a cudalint smoke reference"):
        load_reference(path)


def test_other_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ref.safetensors"
    save_file({}, str(path), metadata={"cudalint": json.dumps({"format": "something/9"})})
    with pytest.raises(HarnessError, match="format 'something/9'"):
        load_reference(path)


def test_pickle_is_not_a_reference(tmp_path: Path) -> None:
    path = tmp_path / "ref.pt"
    torch.save({"x": torch.ones(1)}, path)
    with pytest.raises(HarnessError, match="cannot read reference"):
        load_reference(path)

"""A saved reference is checked to its leaves before the target is imported (issue 44, item
15): malformed metadata of every kind is one line, exit 2, and the target's module never runs;
a folder given as the reference is named as a folder; `--kill-after 0` and a tolerance that is
no finite number are usage errors.

The references are written by hand in safetensors' layout (8 bytes of header length, the JSON
header, the data), so that no case needs torch to make it."""

from __future__ import annotations

import copy
import json
import struct
from pathlib import Path
from typing import Any

import pytest

from cudalint.runtime.smoke.command import main
from cudalint.runtime.smoke.reference import FORMAT

TARGET = """\
from pathlib import Path

Path(__file__).with_name("imported").write_text("the target was imported")


def step(device):
    return {"loss": 1.0}
"""

GOOD: dict[str, Any] = {
    "format": FORMAT,
    "target": "",  # set to the target's identity by the fixture
    "target_text": "smoke_target.py:step",
    "environment": {"device": "cuda:0", "device_name": "NVIDIA H200", "torch": "2.13.0",
                    "os": "Linux"},
    "created": "2026-12-01T10:00:00+00:00",
    "leaves": [{"path": "weight", "kind": "tensor", "key": "0", "dtype": "float32",
                "view_as_real": False},
               {"path": "loss", "kind": "float", "value": "0.25"},
               {"path": "steps", "kind": "value", "value": 3}],
    "random_ops": [],
    "training_losses": [2.5, 1.25, "nan", None],
}


def _safetensors(path: Path, document: object, tensors: dict[str, Any] | None = None,
                 metadata: object = None) -> None:
    header: dict[str, Any] = {"0": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}
    if tensors is not None:
        header = tensors
    header["__metadata__"] = metadata if metadata is not None else {
        "cudalint": document if isinstance(document, str) else json.dumps(document)}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 4)


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "smoke_target.py").write_text(TARGET)
    return tmp_path, f"{tmp_path / 'smoke_target.py'}:step"


def _identity(target: str) -> str:
    from cudalint.runtime.smoke.target import parse_target

    return parse_target(target).identity


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def _changed(path: str, value: object) -> dict[str, Any]:
    """GOOD with the field at `path` (dots, list indexes as numbers) set to `value`, or
    removed where `value` is ...."""
    document = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    here: Any = document
    for part in parents:
        here = here[int(part)] if part.isdigit() else here[part]
    key: Any = int(last) if last.isdigit() else last
    if value is ...:
        del here[key]
    else:
        here[key] = value
    return document


# (field, value, what the error says): wrong types at every level of the document
MALFORMED: list[tuple[str, object, str]] = [
    ("target", 5, "target is 5, not a string"),
    ("target", ..., "target is missing"),
    ("target_text", ["a"], "target_text is a list of 1, not a string"),
    ("created", 2026, "created is 2026, not a string"),
    ("environment", "cuda", "environment is the string 'cuda', not an object"),
    ("environment.device", 0, "environment.device is 0, not a string"),
    ("environment.device_name", 5, "environment.device_name is 5, not a string or null"),
    ("environment.torch", None, "environment.torch is null, not a string"),
    ("environment.os", True, "environment.os is true, not a string"),
    ("leaves", None, "leaves is null, not a list"),
    ("leaves", ..., "leaves is missing"),
    ("leaves", {"0": 1}, "leaves is an object, not a list"),
    ("leaves.0", "weight", "leaves[0] is the string 'weight', not an object"),
    ("leaves.0.kind", "pickle", "leaves[0].kind is the string 'pickle', not one of 'tensor'"),
    ("leaves.0.kind", None, "leaves[0].kind is null, not one of"),
    ("leaves.0.path", 3, "leaves[0].path is 3, not a string"),
    ("leaves.0.key", 0, "leaves[0].key is 0, not a string"),
    ("leaves.0.key", ..., "leaves[0].key is missing"),
    ("leaves.0.dtype", None, "leaves[0].dtype is null, not a string"),
    ("leaves.0.view_as_real", "no", "leaves[0].view_as_real is the string 'no', not true or "
                                    "false"),
    ("leaves.0.key", "7", "names the tensor '7', which the file does not hold"),
    ("leaves.1.value", 0.25, "leaves[1].value is 0.25, not a string (a float written as text)"),
    ("leaves.1.value", "a quarter", "leaves[1].value is the string 'a quarter', not a string "
                                    "(a float written as text)"),
    ("leaves.2.value", [3], "leaves[2].value is a list of 1, not a string, a whole number, "
                            "true, false or null"),
    ("leaves.2.value", {"n": 3}, "leaves[2].value is an object, not a string, a whole number"),
    ("leaves.2.value", ..., "leaves[2].value is missing"),
    ("random_ops", "randn", "random_ops is the string 'randn', not a list"),
    ("random_ops", [1], "random_ops[0] is 1, not a string"),
    ("training_losses", "2.5", "training_losses is the string '2.5', not a list"),
    ("training_losses.0", "2.5", "training_losses[0] is the string '2.5', not a finite number, "
                                 "'nan', 'inf', '-inf' or null"),
    ("training_losses.1", True, "training_losses[1] is true, not a finite number"),
]


@pytest.mark.parametrize(("field", "value", "said"), MALFORMED,
                         ids=[f"{field}={value!r}"[:40] for field, value, _ in MALFORMED])
def test_malformed_metadata_is_one_line_before_the_target_is_imported(
        project: tuple[Path, str], capsys, field: str, value: object, said: str) -> None:
    root, target = project
    document = _changed(field, value)
    if field != "target" and "target" in document:
        document["target"] = _identity(target)
    reference = root / "ref.safetensors"
    _safetensors(reference, document)
    code, err = _run(capsys, target, "--reference", str(reference))
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("cudalint smoke: error: "), err
    assert said in err and "internal error" not in err
    assert not (root / "imported").exists()


@pytest.mark.parametrize(("tensors", "metadata", "said"), [
    ({"0": {"dtype": "F32", "shape": "1", "data_offsets": [0, 4]}}, None,
     "tensors.0.shape is the string '1', not a list"),
    ({"0": 5}, None, "tensors.0 is 5, not an object"),
    (None, {"cudalint": 5}, "its 'cudalint' metadata is not text"),
    (None, "cudalint", "is not a cudalint smoke reference"),
], ids=["shape-text", "entry-number", "metadata-number", "metadata-text"])
def test_a_malformed_safetensors_header_is_one_line(project: tuple[Path, str], capsys,
                                                    tensors: Any, metadata: Any,
                                                    said: str) -> None:
    root, target = project
    document = GOOD | {"target": _identity(target)}
    reference = root / "ref.safetensors"
    _safetensors(reference, document, tensors, metadata)
    code, err = _run(capsys, target, "--reference", str(reference))
    assert (code, err.count("\n")) == (2, 1), err
    assert said in err and not (root / "imported").exists()


@pytest.mark.parametrize("text", ["[1, 2]", "{not json", "3"])
def test_metadata_that_is_no_json_object_is_one_line(project: tuple[Path, str], capsys,
                                                     text: str) -> None:
    root, target = project
    reference = root / "ref.safetensors"
    _safetensors(reference, text)
    code, err = _run(capsys, target, "--reference", str(reference))
    assert (code, err.count("\n")) == (2, 1), err
    assert str(reference) in err and not (root / "imported").exists()


def test_the_well_formed_reference_passes_the_header_check(project: tuple[Path, str]) -> None:
    """The table's base document is valid: each case above fails for its own change."""
    from cudalint.runtime.smoke.reference import check_header

    root, target = project
    reference = root / "ref.safetensors"
    _safetensors(reference, GOOD | {"target": _identity(target)})
    check_header(reference, _identity(target), target)


def test_a_folder_given_as_the_reference_is_named_a_folder(project: tuple[Path, str],
                                                            capsys) -> None:
    root, target = project
    (root / "refs").mkdir()
    code, err = _run(capsys, target, "--reference", str(root / "refs"))
    assert code == 2
    assert err == (f"cudalint smoke: error: {root / 'refs'} is a folder, not a reference file "
                   "(give the .safetensors file --save-reference wrote)\n")


@pytest.mark.parametrize(("argv", "said"), [
    (["--kill-after", "0"], "argument --kill-after: must be 1 or more"),
    (["--rtol", "nan"], "argument --rtol: must be a finite number from 0 up"),
    (["--atol", "inf"], "argument --atol: must be a finite number from 0 up"),
    (["--rtol", "1e999"], "argument --rtol: must be a finite number from 0 up"),
    (["--atol", "-0.5"], "argument --atol: must be a finite number from 0 up"),
])
def test_a_request_that_cannot_mean_anything_is_a_usage_error(project: tuple[Path, str],
                                                              capsys, argv: list[str],
                                                              said: str) -> None:
    root, target = project
    code, err = _run(capsys, target, *argv)
    assert code == 2 and said in err
    assert not (root / "imported").exists()


@pytest.mark.parametrize("value", ["inf", "nan", "-inf"])
def test_a_pyproject_tolerance_that_is_no_finite_number_is_refused(project: tuple[Path, str],
                                                                   capsys, value: str) -> None:
    root, target = project
    (root / "pyproject.toml").write_text(f"[project]\nname = 'p'\n\n[tool.cudalint.smoke]\n"
                                         f"atol = {value}\n")
    code, err = _run(capsys, target)
    assert (code, err.count("\n")) == (2, 1)
    assert "atol must be a number from 0 up" in err and not (root / "imported").exists()

"""Saved outputs to compare with, typically from the CUDA server.

One safetensors file: the tensors, plus a JSON document in the file's metadata holding the
target, the environment it was saved in, and each leaf's path and non-tensor value. Loading one
never runs code (no pickle). Complex dtypes safetensors lacks are stored as `view_as_real`.
"""

from __future__ import annotations

import datetime
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudalint.runtime.smoke import schema
from cudalint.runtime.smoke.errors import HarnessError
from cudalint.runtime.smoke.outputs import Leaf

if TYPE_CHECKING:
    import torch

FORMAT = "cudalint-smoke-reference/1"
_METADATA_KEY = "cudalint"


def _parses(kind: type) -> schema.Leaf:
    def test(text: str) -> bool:
        try:
            kind(text)
        except ValueError:
            return False
        return True

    return schema.Leaf("string", test=test, asks=f"(a {kind.__name__} written as text)")


# The metadata document `save_reference` writes, to its leaves: checked before the target is
# imported, so that a reference that is not one stops the run at once.
_PATH = {"path": schema.STRING}
LEAF = schema.Tagged("kind", {
    "tensor": schema.Record(required={**_PATH, "key": schema.STRING, "dtype": schema.STRING},
                            optional={"view_as_real": schema.BOOLEAN}),
    "value": schema.Record(required={**_PATH, "value": schema.AnyOf(
        (schema.STRING, schema.Leaf("integer"), schema.BOOLEAN, schema.NULL),
        "a string, a whole number, true, false or null")}),
    "float": schema.Record(required={**_PATH, "value": _parses(float)}),
    "complex": schema.Record(required={**_PATH, "value": _parses(complex)}),
})
DOCUMENT = schema.Record(
    required={"format": schema.STRING, "target": schema.STRING,
              "leaves": schema.ListOf(LEAF)},
    optional={"target_text": schema.STRING, "created": schema.STRING,
              "random_ops": schema.ListOf(schema.STRING),
              # the training check's loss per step, as text where JSON has no number
              "training_losses": schema.ListOf(schema.AnyOf(
                  (schema.NUMBER, schema.OneOf(("nan", "inf", "-inf")), schema.NULL),
                  "a finite number, 'nan', 'inf', '-inf' or null")),
              "environment": schema.Record(optional={
                  "device": schema.STRING, "device_name": schema.OPTIONAL_STRING,
                  "torch": schema.STRING, "os": schema.STRING})})
# The safetensors header around it: each tensor's entry, and the metadata (text only).
_TENSOR_ENTRY = schema.Record(required={"dtype": schema.STRING,
                                        "shape": schema.ListOf(schema.COUNT),
                                        "data_offsets": schema.ListOf(schema.COUNT)})


@dataclass(frozen=True)
class Reference:
    target: str  # TargetSpec.identity
    target_text: str
    environment: dict[str, Any]
    created: str
    leaves: list[Leaf]
    random_ops: tuple[str, ...] = ()  # ops that drew on the saving run's accelerator
    # The training check's loss per step (None: saved by a cudalint before 0.3, or no training)
    training_losses: list[float | None] | None = None

    @property
    def device_type(self) -> str:
        return str(self.environment.get("device", "?")).partition(":")[0]

    def origin(self) -> str:
        env = self.environment
        name = f" ({env['device_name']})" if env.get("device_name") else ""
        return (f"{env.get('device', '?')}{name}, torch {env.get('torch', '?')}, "
                f"{env.get('os', '?')}, saved {self.created}")


def save_reference(
    path: Path, leaves: list[Leaf], *, target: str, target_text: str,
    environment: dict[str, Any], random_ops: tuple[str, ...] = (),
    losses: list[float | None] | None = None,
) -> None:
    from safetensors.torch import save_file

    tensors: dict[str, torch.Tensor] = {}
    entries = [_entry(leaf, str(index), tensors) for index, leaf in enumerate(leaves)]
    document: dict[str, Any] = {
        "format": FORMAT,
        "target": target,
        "target_text": target_text,
        "environment": environment,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "leaves": entries,
        "random_ops": list(random_ops),
    }
    if losses is not None:  # as text where JSON has no number: NaN, infinity
        document["training_losses"] = [None if v is None else v if math.isfinite(v) else repr(v)
                                       for v in losses]
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata={_METADATA_KEY: json.dumps(document)})


def _entry(leaf: Leaf, key: str, tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    import torch

    value = leaf.value
    if isinstance(value, torch.Tensor):
        stored, as_real = _storable(value)
        tensors[key] = stored
        return {"path": leaf.path, "kind": "tensor", "key": key,
                "dtype": str(value.dtype).removeprefix("torch."), "view_as_real": as_real}
    if isinstance(value, (bool, int, str)) or value is None:
        return {"path": leaf.path, "kind": "value", "value": value}
    # Floats and complex numbers as text: JSON has no NaN or infinity.
    return {"path": leaf.path, "kind": type(value).__name__, "value": repr(value)}


def _storable(tensor: torch.Tensor) -> tuple[torch.Tensor, bool]:
    import torch

    # A fresh contiguous copy: safetensors refuses tensors that share memory.
    if tensor.is_complex() and tensor.dtype != torch.complex64:
        return torch.view_as_real(tensor).contiguous().clone(), True
    return tensor.contiguous().clone(), False


def check_header(path: Path, identity: str, shown: str) -> None:
    """Validate a reference before the target is imported, without torch: the file exists, is
    safetensors with our metadata in a format this cudalint reads, valid to its leaves, and was
    saved for the target `identity` (TargetSpec.identity; `shown` is how the user wrote it).
    HarnessError if not."""
    _is_file(path)
    try:
        with path.open("rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            if not 0 < size <= _HEADER_LIMIT:
                raise ValueError("not a safetensors file")
            header = json.loads(handle.read(size))
    except (OSError, ValueError, RecursionError) as exc:
        raise HarnessError(f"cannot read reference {path}: {exc}") from None
    if not isinstance(header, dict):
        raise HarnessError(f"cannot read reference {path}: not a safetensors file")
    metadata = header.get("__metadata__") or {}
    if not isinstance(metadata, dict) or _METADATA_KEY not in metadata:
        raise HarnessError(f"{path} is not a cudalint smoke reference (no {_METADATA_KEY!r} "
                           "metadata); save one with --save-reference")
    document = _document(metadata, path)
    _valid(schema.MapOf(_TENSOR_ENTRY),
           {key: entry for key, entry in header.items() if key != "__metadata__"}, path,
           "tensors")
    missing = [leaf["key"] for leaf in document["leaves"]
               if leaf["kind"] == "tensor" and leaf["key"] not in header]
    if missing:
        raise HarnessError(f"{path}: malformed reference: a leaf names the tensor "
                           f"{missing[0]!r}, which the file does not hold")
    if document["target"] != identity:
        raise HarnessError(f"{path} holds outputs of "
                           f"{document.get('target_text') or document['target']!r}, "
                           f"not of {shown!r}")


def _is_file(path: Path) -> None:
    if path.is_dir():
        raise HarnessError(f"{path} is a folder, not a reference file (give the .safetensors "
                           "file --save-reference wrote)")
    if not path.is_file():
        raise HarnessError(f"no such reference file: {path}")


def _document(metadata: dict[str, Any], path: Path) -> dict[str, Any]:
    """The metadata's document, checked to its leaves; HarnessError (one line) if not."""
    text = metadata[_METADATA_KEY]
    if not isinstance(text, str):
        raise HarnessError(f"{path}: malformed reference: its {_METADATA_KEY!r} metadata is not "
                           "text")
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise HarnessError(f"cannot read reference {path}: {exc}") from None
    if not isinstance(document, dict):
        raise HarnessError(f"{path}: malformed reference: its metadata is not a JSON object")
    _check_document(document, path)
    _valid(DOCUMENT, document, path)
    return document


def _valid(shape: schema.Shape, value: object, path: Path, where: str = "") -> None:
    try:
        schema.check(shape, value, where)
    except schema.SchemaError as error:
        raise HarnessError(f"{path}: malformed reference: {error}") from None


def _check_document(document: dict[str, Any], path: Path) -> None:
    if document.get("format") != FORMAT:
        raise HarnessError(f"{path} is a reference of format {document.get('format')!r}; "
                           f"this cudalint reads {FORMAT!r}")


# safetensors caps its JSON header at 100 MB.
_HEADER_LIMIT = 100_000_000


def load_reference(path: Path) -> Reference:
    """Read a reference file; HarnessError if it is missing, unreadable or not ours."""
    _is_file(path)
    try:
        return _read(path)
    except HarnessError:
        raise
    except Exception as exc:
        raise HarnessError(f"cannot read reference {path}: {exc}") from None


def _read(path: Path) -> Reference:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata() or {}
        if _METADATA_KEY not in metadata:
            raise HarnessError(f"{path} is not a cudalint smoke reference (no {_METADATA_KEY!r} "
                               "metadata); save one with --save-reference")
        document = _document(metadata, path)
        leaves = [_leaf(entry, handle) for entry in document["leaves"]]
    return Reference(
        target=document["target"], target_text=document.get("target_text", ""),
        environment=document.get("environment", {}), created=document.get("created", "?"),
        leaves=leaves, random_ops=tuple(document.get("random_ops", ())),
        training_losses=_losses(document.get("training_losses")),
    )


def _losses(value: Any) -> list[float | None] | None:
    """The per-step losses (checked by DOCUMENT: numbers, their text, nulls)."""
    if not isinstance(value, list):
        return None
    return [None if item is None else float(item) for item in value]


def _leaf(entry: dict[str, Any], handle: Any) -> Leaf:
    import torch

    kind = entry["kind"]
    if kind == "tensor":
        tensor = handle.get_tensor(entry["key"])
        if entry.get("view_as_real"):
            tensor = torch.view_as_complex(tensor.contiguous())
        return Leaf(entry["path"], tensor)
    if kind == "value":
        return Leaf(entry["path"], entry["value"])
    if kind == "float":
        return Leaf(entry["path"], float(entry["value"]))
    if kind == "complex":
        return Leaf(entry["path"], complex(entry["value"]))
    raise HarnessError(f"unknown leaf kind {kind!r} in the reference")

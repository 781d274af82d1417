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

from cudalint.runtime.smoke.errors import HarnessError
from cudalint.runtime.smoke.outputs import Leaf

if TYPE_CHECKING:
    import torch

FORMAT = "cudalint-smoke-reference/1"
_METADATA_KEY = "cudalint"


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
    safetensors with our metadata in a format this cudalint reads, and was saved for the target
    `identity` (TargetSpec.identity; `shown` is how the user wrote it). HarnessError if not."""
    if not path.is_file():
        raise HarnessError(f"no such reference file: {path}")
    try:
        with path.open("rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            if not 0 < size <= _HEADER_LIMIT:
                raise ValueError("not a safetensors file")
            header = json.loads(handle.read(size))
        metadata = header.get("__metadata__") or {}
    except (OSError, ValueError, AttributeError) as exc:
        raise HarnessError(f"cannot read reference {path}: {exc}") from None
    if _METADATA_KEY not in metadata:
        raise HarnessError(f"{path} is not a cudalint smoke reference (no {_METADATA_KEY!r} "
                           "metadata); save one with --save-reference")
    try:
        document = json.loads(metadata[_METADATA_KEY])
    except ValueError as exc:
        raise HarnessError(f"cannot read reference {path}: {exc}") from None
    _check_document(document, path)
    if document.get("target") != identity:
        raise HarnessError(f"{path} holds outputs of "
                           f"{document.get('target_text') or document.get('target')!r}, "
                           f"not of {shown!r}")


def _check_document(document: dict[str, Any], path: Path) -> None:
    if document.get("format") != FORMAT:
        raise HarnessError(f"{path} is a reference of format {document.get('format')!r}; "
                           f"this cudalint reads {FORMAT!r}")


# safetensors caps its JSON header at 100 MB.
_HEADER_LIMIT = 100_000_000


def load_reference(path: Path) -> Reference:
    """Read a reference file; HarnessError if it is missing, unreadable or not ours."""
    if not path.is_file():
        raise HarnessError(f"no such reference file: {path}")
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
        document = json.loads(metadata[_METADATA_KEY])
        _check_document(document, path)
        leaves = [_leaf(entry, handle) for entry in document["leaves"]]
    return Reference(
        target=document["target"], target_text=document.get("target_text", ""),
        environment=document.get("environment", {}), created=document.get("created", "?"),
        leaves=leaves, random_ops=tuple(document.get("random_ops", ())),
        training_losses=_losses(document.get("training_losses")),
    )


def _losses(value: Any) -> list[float | None] | None:
    if not isinstance(value, list):
        return None
    try:
        return [None if item is None else float(item) for item in value]
    except (TypeError, ValueError):
        raise HarnessError(f"the reference's training_losses are not numbers: {value!r}"
                           ) from None


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

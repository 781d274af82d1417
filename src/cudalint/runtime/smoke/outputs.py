"""A target's output as a flat list of named leaves: `loss`, `logits`, `state['fc.weight']`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    import torch

LeafValue = Union["torch.Tensor", bool, int, float, complex, str, None]
_SCALARS = (bool, int, float, complex, str, type(None))


@dataclass(frozen=True)
class Leaf:
    path: str
    value: LeafValue

    @property
    def kind(self) -> str:
        """tensor, number, str or none: the kinds compared with each other."""
        if isinstance(self.value, (bool, int, float, complex)):
            return "number"
        if self.value is None:
            return "none"
        return "str" if isinstance(self.value, str) else "tensor"


class UnsupportedOutput(TypeError):
    def __init__(self, path: str, value: object) -> None:
        super().__init__(
            f"output {path or 'value'} is a {type(value).__name__}; smoke compares tensors, "
            "numbers, strings, None, nn.Module and dicts, lists and tuples of them"
        )


def flatten(output: Any) -> list[Leaf]:
    """Every leaf of `output`, tensors detached and copied to CPU; an `nn.Module` stands for
    its state_dict. Raises UnsupportedOutput for anything else."""
    leaves: list[Leaf] = []
    _walk(output, "", leaves)
    return leaves


def _walk(value: Any, path: str, leaves: list[Leaf]) -> None:
    import torch

    if isinstance(value, torch.nn.Module):
        _walk(value.state_dict(), path or "state_dict", leaves)
    elif isinstance(value, torch.Tensor):
        leaves.append(Leaf(path or "output", _snapshot(value)))
    elif isinstance(value, _SCALARS):
        leaves.append(Leaf(path or "output", value))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _walk(item, child_path(path, key), leaves)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            _walk(getattr(value, field.name), child_path(path, field.name), leaves)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _walk(item, f"{path or 'output'}[{index}]", leaves)
    elif type(value).__module__ == "numpy":
        _walk(_from_numpy(value, path), path, leaves)
    else:
        raise UnsupportedOutput(path, value)


def child_path(path: str, key: object) -> str:
    if not path and isinstance(key, str) and key.isidentifier():
        return key
    return f"{path}[{key!r}]"


def _snapshot(tensor: torch.Tensor) -> torch.Tensor:
    import torch

    copy = tensor.detach()
    if copy.layout != torch.strided:
        copy = copy.to_dense()
    # A copy, so that later runs that update the same tensors in place cannot change it.
    return copy.to("cpu", copy=True)


def _from_numpy(value: Any, path: str) -> Any:
    import numpy
    import torch

    if isinstance(value, numpy.ndarray):
        return torch.from_numpy(numpy.ascontiguousarray(value))
    if isinstance(value, numpy.generic):
        return value.item()
    raise UnsupportedOutput(path, value)


def tensors(leaves: list[Leaf]) -> list[torch.Tensor]:
    import torch

    return [leaf.value for leaf in leaves if isinstance(leaf.value, torch.Tensor)]

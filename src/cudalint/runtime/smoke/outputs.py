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


_COMPARED = ("smoke compares tensors, numbers, strings, None, nn.Module and dicts, lists and "
             "tuples of them")


class UnsupportedOutput(TypeError):
    """An output smoke cannot compare: the target's problem (a failed run), not the harness's."""

    def __init__(self, path: str, value: object, why: str | None = None) -> None:
        super().__init__(f"output {path or 'value'} "
                         f"{why or f'is a {type(value).__name__}'}; {_COMPARED}")


def flatten(output: Any) -> list[Leaf]:
    """Every leaf of `output`, tensors detached and copied to CPU; an `nn.Module` stands for
    its state_dict. Raises UnsupportedOutput for anything else, a container that holds itself
    one nested deeper than Python's recursion limit, and one whose own code raises included."""
    leaves: list[Leaf] = []
    try:
        _walk(output, "", leaves, set())
    except RecursionError:
        raise UnsupportedOutput("", output, "is nested too deeply to compare") from None
    except UnsupportedOutput:
        raise
    except Exception as exc:  # the output's own code (a key's __repr__, a mapping's items())
        message = str(exc).strip().splitlines()
        raise UnsupportedOutput("", output, f"could not be read: {type(exc).__name__}"
                                + (f": {message[0]}" if message else "")) from None
    return leaves


def _walk(value: Any, path: str, leaves: list[Leaf], within: set[int]) -> None:
    """`within`: the containers `value` is inside (their ids), to find one that holds itself."""
    import torch

    if isinstance(value, torch.nn.Module):
        _walk(value.state_dict(), path or "state_dict", leaves, within)
    elif isinstance(value, torch.Tensor):
        leaves.append(Leaf(path or "output", _snapshot(value)))
    elif isinstance(value, _SCALARS):
        leaves.append(Leaf(path or "output", value))
    elif type(value).__module__ == "numpy":
        _walk(_from_numpy(value, path), path, leaves, within)
    else:
        items = _items(value, path)
        if id(value) in within:
            raise UnsupportedOutput(path, value, f"is a {type(value).__name__} that holds "
                                                 "itself (a reference cycle)")
        within.add(id(value))
        for item_path, item in items:
            _walk(item, item_path, leaves, within)
        within.discard(id(value))


def _items(value: Any, path: str) -> list[tuple[str, Any]]:
    """The children of a container, with their paths; UnsupportedOutput for anything else."""
    if isinstance(value, Mapping):
        return [(child_path(path, key), item) for key, item in value.items()]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(child_path(path, field.name), getattr(value, field.name))
                for field in dataclasses.fields(value)]
    if isinstance(value, (list, tuple)):
        return [(f"{path or 'output'}[{index}]", item) for index, item in enumerate(value)]
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

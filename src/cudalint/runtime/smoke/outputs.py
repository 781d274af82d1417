"""A target's output as a flat list of named leaves: `loss`, `logits`, `state['fc.weight']`."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    import torch

    from cudalint.runtime.smoke.artefacts import Artefact

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


_COMPARED = ("smoke compares tensors, numbers, strings, None, nn.Module, paths of files the "
             "target wrote and dicts, lists and tuples of them")


class UnsupportedOutput(TypeError):
    """An output smoke cannot compare: the target's problem (a failed run), not the harness's."""

    def __init__(self, path: str, value: object, why: str | None = None) -> None:
        super().__init__(f"output {path or 'value'} "
                         f"{why or f'is a {type(value).__name__}'}; {_COMPARED}")


class UnreadableFile(UnsupportedOutput):
    """An output names a file that cannot be read (not there): nothing to compare."""

    def __init__(self, path: str, file: object, error: OSError) -> None:
        TypeError.__init__(self, f"output {path} names {file}, which cannot be "
                                  f"read: {error.strerror or error}")


def flatten(output: Any, files: list[Artefact] | None = None) -> list[Leaf]:
    """Every leaf of `output`, tensors detached and copied to CPU; an `nn.Module` stands for
    its state_dict, a path for what the file holds (artefacts; each noted in `files`). Raises
    UnsupportedOutput for anything else (UnreadableFile for a path that cannot be read), a
    container that holds itself, one nested deeper than Python's recursion limit, and one whose
    own code raises included."""
    walker = _Walker(files)
    try:
        walker.walk(output, "")
    except RecursionError:
        raise UnsupportedOutput("", output, "is nested too deeply to compare") from None
    except UnsupportedOutput:
        raise
    except Exception as exc:  # the output's own code (a key's __repr__, a mapping's items())
        message = str(exc).strip().splitlines()
        raise UnsupportedOutput("", output, f"could not be read: {type(exc).__name__}"
                                + (f": {message[0]}" if message else "")) from None
    return walker.leaves


class _Walker:
    def __init__(self, files: list[Artefact] | None) -> None:
        self.leaves: list[Leaf] = []
        self.files = files
        self.within: set[int] = set()  # the containers being walked (ids): one holding itself

    def walk(self, value: Any, path: str) -> None:
        import torch

        if isinstance(value, os.PathLike):
            from cudalint.runtime.smoke.artefacts import read_artefacts

            try:
                read_artefacts(Path(value), path or "output", self.walk, self.files)
            except OSError as exc:
                raise UnreadableFile(path or "output", value, exc) from None
        elif isinstance(value, torch.nn.Module):
            self.walk(value.state_dict(), path or "state_dict")
        elif isinstance(value, torch.Tensor):
            self.leaves.append(Leaf(path or "output", _snapshot(value)))
        elif isinstance(value, _SCALARS):
            self.leaves.append(Leaf(path or "output", value))
        elif type(value).__module__ == "numpy":
            self.walk(_from_numpy(value, path), path)
        else:
            items = _items(value, path)
            if id(value) in self.within:
                raise UnsupportedOutput(path, value, f"is a {type(value).__name__} that holds "
                                                     "itself (a reference cycle)")
            self.within.add(id(value))
            for item_path, item in items:
                self.walk(item, item_path)
            self.within.discard(id(value))


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

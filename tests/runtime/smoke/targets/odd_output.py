"""Returns something smoke cannot compare: a generator beside the loss."""

from __future__ import annotations

import torch


def step(device: torch.device) -> dict[str, object]:
    batches = (torch.ones(2, device=device) for _ in range(3))
    return {"loss": torch.ones((), device=device), "batches": batches}


def holds_itself(device: torch.device) -> dict[str, object]:
    """A dict that refers to itself: no finite set of leaves to compare."""
    state: dict[str, object] = {"loss": torch.ones((), device=device)}
    state["self"] = state
    return state


def nested_deeply(device: torch.device) -> list[object]:
    """Nested deeper than Python's recursion limit."""
    value: list[object] = [torch.ones((), device=device)]
    for _ in range(100_000):
        value = [value]
    return value


class _Key:
    def __repr__(self) -> str:
        raise RuntimeError("this key cannot be printed")


def unprintable_key(device: torch.device) -> dict[object, object]:
    return {"loss": torch.ones((), device=device), _Key(): 1.0}


def shares_a_tensor(device: torch.device) -> dict[str, object]:
    """The same tensor and the same dict twice: no cycle, compared as it is."""
    weight = torch.ones(2, device=device)
    inner = {"w": weight}
    return {"a": inner, "b": inner, "both": [weight, weight]}

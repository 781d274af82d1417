"""A small resumable training loop, for `--batch-sizes` and `--interrupt`."""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

# Batches above this raise torch's out-of-memory error, as a full GPU would.
MEMORY_LIMIT = int(os.environ.get("SMOKE_MEMORY_LIMIT", "1000000"))


def train(device: torch.device, batch_size: int = 4, steps: int = 3,
          resume: dict[str, Any] | None = None) -> dict[str, Any]:
    if batch_size > MEMORY_LIMIT:
        raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate {batch_size} MiB")
    features = torch.randn(batch_size, 6).to(device)
    targets = torch.randn(batch_size, 2).to(device)
    model = nn.Linear(6, 2).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    start = 0
    if resume is not None:
        model.load_state_dict(resume["model"])
        if not os.environ.get("SMOKE_FORGET_OPTIMIZER"):  # a resume that loses Adam's moments
            optimizer.load_state_dict(resume["optimizer"])
        start = resume["step"]
    for _ in range(start, steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(features), targets)
        loss.backward()
        optimizer.step()
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": steps}


def broken_batches(device: torch.device, batch_size: int = 4) -> torch.Tensor:
    """Crashes at one batch size for a reason other than memory."""
    return torch.ones(batch_size, 3).to(device).view(-1, 5) if batch_size == 8 else torch.ones(1)


def left_on_cpu(device: torch.device) -> torch.Tensor:
    """The model goes to the device; the mask stays behind on the CPU."""
    model = nn.Linear(4, 4).to(device)
    mask = torch.tril(torch.ones(4, 4))
    out = model(torch.ones(4, 4).to(device))
    return out * mask.to(device) + mask.sum()

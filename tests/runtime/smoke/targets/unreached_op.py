"""A step whose eigendecomposition (no MPS kernel) sits in a branch the smoke run does not take."""

from __future__ import annotations

import torch


def step(device: torch.device, exact: bool = False) -> torch.Tensor:
    x = torch.randn(4, 4)
    if exact:
        return torch.linalg.eigvals(x).real.to(device)
    return (x @ x).to(device)

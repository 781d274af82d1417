"""A target that crashes partway: a shape mismatch in the user's own code."""

from __future__ import annotations

import torch
from torch import nn


def build(device: torch.device) -> nn.Module:
    return nn.Linear(8, 4).to(device)


def forward(device: torch.device) -> torch.Tensor:
    layer = build(device)
    batch = torch.randn(2, 5, device=device)
    return layer(batch)

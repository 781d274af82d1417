"""A sibling module, imported by the targets as a project's model file would be."""

from __future__ import annotations

import torch
from torch import nn


class TinyNet(nn.Module):
    def __init__(self, features: int = 8, classes: int = 3) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, 16), nn.ReLU(), nn.LayerNorm(16))
        self.head = nn.Linear(16, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def synthetic_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    inputs = torch.randn(batch_size, 8)
    labels = torch.randint(0, 3, (batch_size,))
    return inputs.to(device), labels.to(device)

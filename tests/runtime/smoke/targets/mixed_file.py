"""One file, three functions: a healthy training step, and two others it never calls, one in
float64 and one with an eigendecomposition (no MPS kernel)."""

from __future__ import annotations

import torch
from tiny_model import TinyNet, synthetic_batch


def spectrum(matrix: torch.Tensor) -> torch.Tensor:
    return torch.linalg.eigvals(matrix).real


def precise_mean(device: torch.device) -> torch.Tensor:
    values = torch.randn(16, dtype=torch.float64).to(device)
    return values.mean()


def _loss(model: TinyNet, inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(model(inputs), labels)


def healthy(device: torch.device) -> torch.Tensor:
    model = TinyNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs, labels = synthetic_batch(8, device)
    for _ in range(3):
        optimizer.zero_grad()
        loss = _loss(model, inputs, labels)
        loss.backward()
        optimizer.step()
    return loss.detach()


def uses_both(device: torch.device) -> torch.Tensor:
    return spectrum(torch.randn(3, 3)).to(device) + precise_mean(device).float()

"""Training targets for the training check: one healthy, and one for each way a training loop
can look busy and learn nothing."""

from __future__ import annotations

import os

import torch
from tiny_model import TinyNet, synthetic_batch
from torch import nn

STEPS = 4


def _fit(device: torch.device, lr: float = 0.1) -> tuple[nn.Module, torch.optim.Optimizer,
                                                          torch.Tensor, torch.Tensor]:
    model = TinyNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    inputs, labels = synthetic_batch(8, device)
    return model, optimizer, inputs, labels


def healthy(device: torch.device) -> torch.Tensor:
    """SMOKE_LR changes the learning rate: another training than the one a reference saved."""
    model, optimizer, inputs, labels = _fit(device, lr=float(os.environ.get("SMOKE_LR", "0.1")))
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
    return loss.detach()


def constant_loss(device: torch.device) -> torch.Tensor:
    """The number of classes read from an output of shape (B, 1, V): one class, whose
    cross-entropy is exactly 0 whatever the weights."""
    model, optimizer, inputs, labels = _fit(device)
    for _ in range(STEPS):
        optimizer.zero_grad()
        logits = model(inputs).unsqueeze(1)
        classes = logits.shape[1]
        loss = nn.functional.cross_entropy(logits[:, 0, :classes], labels.clamp(max=classes - 1))
        loss.backward()
        optimizer.step()
    return loss.detach()


def detached_loss(device: torch.device) -> torch.Tensor:
    """The loss rebuilt from its value (to log it): no gradient reaches the model."""
    model, optimizer, inputs, labels = _fit(device)
    for _ in range(STEPS):
        optimizer.zero_grad()
        value = nn.functional.cross_entropy(model(inputs), labels).item()
        loss = torch.tensor(value, requires_grad=True)
        loss.backward()
        optimizer.step()
    return loss.detach()


def frozen_model(device: torch.device) -> torch.Tensor:
    """A learning rate of 0 (a schedule's warm-up that never ends): gradients, no update."""
    model, optimizer, inputs, labels = _fit(device, lr=0.0)
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
    return loss.detach()


def nan_at_step_2(device: torch.device) -> torch.Tensor:
    """A learning rate of 1e38 (for 1e-3): the first step makes the weights so large that the
    next forward pass overflows."""
    model, optimizer, inputs, labels = _fit(device, lr=1e38)
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
    return loss.detach()


def inference(device: torch.device) -> torch.Tensor:
    model = TinyNet().to(device).eval()
    with torch.no_grad():
        return model(synthetic_batch(4, device)[0])


class WithSpareHead(nn.Module):
    """A classifier with a second head that this loss does not use."""

    def __init__(self) -> None:
        super().__init__()
        self.net = TinyNet()
        self.spare = nn.Linear(3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def spare_head(device: torch.device) -> torch.Tensor:
    model = WithSpareHead().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs, labels = synthetic_batch(8, device)
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
    return loss.detach()

"""A healthy training step: two SGD steps of a small classifier."""

from __future__ import annotations

import torch
from tiny_model import TinyNet, synthetic_batch
from torch import nn


def train_step(device: torch.device, batch_size: int) -> dict[str, object]:
    model = TinyNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    inputs, labels = synthetic_batch(batch_size, device)
    for _ in range(2):
        optimizer.zero_grad()
        logits = model(inputs)
        loss = loss_fn(logits, labels)
        loss.backward()
        optimizer.step()
    return {"loss": loss.detach(), "logits": logits.detach(), "state": model.state_dict()}


def trained_model(device: torch.device) -> nn.Module:
    model = TinyNet().to(device)
    inputs, labels = synthetic_batch(4, device)
    nn.functional.cross_entropy(model(inputs), labels).backward()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter -= 0.1 * parameter.grad
    return model

"""Outputs that drift by SMOKE_DRIFT: stands in for a device whose numbers come out different."""

from __future__ import annotations

import os

import torch


def predict(device: torch.device) -> dict[str, object]:
    weights = torch.randn(4, 3, device=device)
    logits = torch.randn(5, 4, device=device) @ weights
    drift = float(os.environ.get("SMOKE_DRIFT", "0"))
    logits[0, 1] += drift
    return {"logits": logits, "scale": 2.5 + drift, "labels": logits.argmax(dim=1)}

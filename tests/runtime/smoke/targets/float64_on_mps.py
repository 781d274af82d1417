"""Raises what a Mac raises when a float64 tensor goes to MPS."""

from __future__ import annotations

import torch


def step(device: torch.device) -> torch.Tensor:
    raise TypeError("Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't "
                    "support float64. Please use float32 instead.")

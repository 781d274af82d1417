"""Emits the warnings torch prints on a Mac, so their capture can be tested off a Mac."""

from __future__ import annotations

import warnings

import torch

FALLBACK = ("The operator 'aten::linalg_eig' is not currently supported on the MPS backend and "
            "will fall back to run on the CPU. This may have performance implications.")
PIN_MEMORY = ("'pin_memory' argument is set as true but not supported on MPS now, device pinned "
              "memory won't be used.")


def step(device: torch.device) -> torch.Tensor:
    warnings.warn(FALLBACK, UserWarning, stacklevel=1)
    warnings.warn(PIN_MEMORY, UserWarning, stacklevel=1)
    return torch.ones(2, device=device)

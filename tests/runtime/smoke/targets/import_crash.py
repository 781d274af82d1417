"""A module that fails while being imported: it needs the project's compiled CUDA extension,
which a Mac cannot build."""

from __future__ import annotations

import _demo_cuda_kernels  # noqa: F401  (built by setup.py's CUDAExtension on the server)
import torch


def run(device: torch.device) -> torch.Tensor:
    return torch.zeros(1, device=device)

"""Code that runs on CUDA and CPU but not on a Mac: float64 features and an eigendecomposition."""

from __future__ import annotations

import torch


def spectrum(device: torch.device) -> dict[str, torch.Tensor]:
    features = torch.randn(6, 4, dtype=torch.float64, device=device)
    covariance = features.T @ features / features.shape[0]
    eigenvalues = torch.linalg.eigvals(covariance.float())
    return {"covariance": covariance.float(), "eigenvalues": eigenvalues.real.sort().values}

"""`--device`: which device the target runs on."""

from __future__ import annotations

import os

import torch

from cudalint.device import ENV_VAR, _auto_device_type, pick_device
from cudalint.runtime.smoke.environment import mps_unavailable_reason
from cudalint.runtime.smoke.errors import HarnessError

CHOICES = ("auto", "mps", "cpu", "cuda")


def resolve_device(choice: str) -> torch.device:
    """auto: $CUDALINT_DEVICE if set, else MPS (or XPU), else CPU. CUDA only when asked for,
    since the point is to prove the program off CUDA."""
    if choice == "auto":
        if os.environ.get(ENV_VAR, "").strip():
            try:
                return pick_device()
            except ValueError as exc:
                raise HarnessError(str(exc)) from None
        return torch.device(_auto_device_type(include_cuda=False))
    if choice == "cuda" and not torch.cuda.is_available():
        raise HarnessError(f"--device cuda: CUDA is not available here (torch {torch.__version__})")
    if choice == "mps" and (reason := mps_unavailable_reason()) is not None:
        raise HarnessError(f"--device mps: {reason}")
    return torch.device(choice)

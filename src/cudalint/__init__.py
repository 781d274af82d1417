"""cudalint: find, fix and smoke-test what ties a PyTorch project to CUDA."""

from __future__ import annotations

__version__ = "0.2.0"

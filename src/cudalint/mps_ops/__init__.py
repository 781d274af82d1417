"""Operator coverage: which ATen ops have an MPS kernel, and which Python calls reach them."""

from __future__ import annotations

from cudalint.mps_ops.coverage import (
    ANY,
    UNKNOWN_VALUE,
    CallInfo,
    Coverage,
    InvalidTorchVersion,
    OpStatus,
    installed_torch_version,
    load_coverage,
    shipped_versions,
)

__all__ = [
    "ANY",
    "UNKNOWN_VALUE",
    "CallInfo",
    "Coverage",
    "InvalidTorchVersion",
    "OpStatus",
    "installed_torch_version",
    "load_coverage",
    "shipped_versions",
]

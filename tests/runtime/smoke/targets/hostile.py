"""Targets that end the process, hang, or print: the harness runs them in a child process."""

from __future__ import annotations

import ctypes
import os
import sys
import time

import torch


def hangs(device: torch.device) -> torch.Tensor:
    time.sleep(600)
    return torch.zeros(1, device=device)


def exits(device: torch.device) -> torch.Tensor:
    sys.exit(3)


def hard_exit(device: torch.device) -> torch.Tensor:
    os._exit(7)


def segfault(device: torch.device) -> torch.Tensor:
    ctypes.string_at(0)
    return torch.zeros(1, device=device)


def interrupted(device: torch.device) -> torch.Tensor:
    raise KeyboardInterrupt


def chatty(device: torch.device) -> torch.Tensor:
    model = torch.nn.Linear(4, 2).to(device)
    print(f"model has {sum(p.numel() for p in model.parameters())} parameters")
    os.write(1, b"a line printed by native code\n")
    return model(torch.ones(3, 4).to(device)).detach()

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


def floods(device: torch.device) -> torch.Tensor:
    """Prints SMOKE_FLOOD_MB megabytes (issue 44, item 6), through Python and native code."""
    line = b"x" * 1023 + b"\n"
    block = line * 1024
    for _ in range(int(os.environ.get("SMOKE_FLOOD_MB", "1"))):
        os.write(2, block)
    return torch.zeros(1, device=device)


def signals_its_parent(device: torch.device) -> torch.Tensor:
    """SIGTERM to the process that started it (cudalint smoke), then to its parent's group and
    its own; then finishes as if nothing happened (issue 44, item 14)."""
    import signal

    os.kill(os.getppid(), signal.SIGTERM)
    os.kill(os.getppid(), signal.SIGINT)
    time.sleep(0.5)  # long enough for the parent to have acted on them
    return torch.ones(1, device=device)


def waits_for_a_signal(device: torch.device) -> torch.Tensor:
    """Writes its pid to SMOKE_PID_FILE, then hangs until stopped."""
    with open(os.environ["SMOKE_PID_FILE"], "w") as file:
        file.write(str(os.getpid()))
    time.sleep(600)
    return torch.zeros(1, device=device)

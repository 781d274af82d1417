"""A training loop that saves and resumes with its own code, for `--kill-after`.

Each save writes its file in two halves with a pause between them, so that the kill lands in
the middle of it. SMOKE_SAVE picks where: `atomic` (the default) into a temporary file, then
os.replace over the checkpoint; `halves` straight over the old checkpoint (not atomic).
SMOKE_START_OVER makes the resume ignore the checkpoint."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn


def _write_in_halves(state: dict[str, Any], path: Path) -> None:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    data = buffer.getvalue()
    with path.open("wb") as file:
        file.write(data[: len(data) // 2])
        file.flush()
        time.sleep(0.5)
        file.write(data[len(data) // 2:])


def _save(state: dict[str, Any], path: Path) -> None:
    if os.environ.get("SMOKE_SAVE") == "halves":
        _write_in_halves(state, path)
        return
    partial = path.with_name(path.name + ".tmp")
    _write_in_halves(state, partial)
    os.replace(partial, path)


def train(device: torch.device, steps: int = 4, checkpoint_dir: str | None = None) -> dict:
    features = torch.randn(8, 6).to(device)
    targets = torch.randn(8, 2).to(device)
    model = nn.Linear(6, 2).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    path = Path(checkpoint_dir) / "last.pt" if checkpoint_dir else None
    start = 0
    if path is not None and path.exists() and not os.environ.get("SMOKE_START_OVER"):
        state = torch.load(path, map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["step"]
    for step in range(start, steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(features), targets)
        loss.backward()
        optimizer.step()
        if path is not None:
            _save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                   "step": step + 1}, path)
    return {"model": model.state_dict(), "step": steps}


def one_step(device: torch.device, steps: int = 4, checkpoint_dir: str | None = None) -> dict:
    """Ignores `steps`: one optimizer step, whatever it is asked for."""
    return train(device, steps=1, checkpoint_dir=checkpoint_dir)

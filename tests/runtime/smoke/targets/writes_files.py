"""A target that writes what a study keeps (predictions, a metrics table, a note) and names the
files in its output. ARTEFACT_DIR is where; ARTEFACT_SHIFT is added to the predictions and
ARTEFACT_NOTE replaces the note, to make a run that differs from its reference."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from tiny_model import TinyNet, synthetic_batch


def predict(device: torch.device) -> dict[str, object]:
    folder = Path(os.environ["ARTEFACT_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    model = TinyNet().to(device).eval()
    inputs, _ = synthetic_batch(8, device)
    with torch.no_grad():
        logits = model(inputs).cpu().numpy()
    logits = logits + np.float32(float(os.environ.get("ARTEFACT_SHIFT", "0")))
    np.save(folder / "predictions.npy", logits)
    rows = "\n".join(f"{row},{value:.9g}" for row, value in enumerate(logits.max(axis=1)))
    (folder / "metrics.csv").write_text(f"row,top_logit\n{rows}\n")
    (folder / "note.txt").write_text(os.environ.get("ARTEFACT_NOTE", "8 predictions") + "\n")
    return {"predictions": folder / "predictions.npy", "metrics": folder / "metrics.csv",
            "note": folder / "note.txt"}

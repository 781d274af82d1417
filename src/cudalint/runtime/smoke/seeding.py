"""One seed for every generator a target may draw from."""

from __future__ import annotations

import random
import sys

SEED = 0


def seed_everything(seed: int = SEED) -> None:
    """Seed Python's `random`, torch (CPU and every device: `torch.manual_seed`) and numpy's
    global generator when the target has imported numpy."""
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)

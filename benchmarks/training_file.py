"""A realistic research training script of a chosen length, for the benchmarks: models, data
loaders, `.cuda()` calls, `torch.cuda.*` calls, and prose (docstrings, comments, log messages)
that mentions CUDA and must not be flagged.

    python benchmarks/training_file.py 2000 > train_big.py
"""

from __future__ import annotations

import sys

HEADER = '''"""Training entry point for the {name} experiments.

Runs on a single CUDA GPU; see README for the cluster set-up and the cuda toolkit version.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import random
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

logger = logging.getLogger(__name__)
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
'''

# Each block is formatted with a distinct `i`, so the file has no two identical functions.
BLOCKS = (
    '''

class Encoder{i}(nn.Module):
    """A small convolutional encoder; the cuda kernels are picked by cudnn autotuning."""

    def __init__(self, channels: int = {c}, width: int = {w}) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, width, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(width, width * 2, kernel_size=3, padding=1)
        self.norm = nn.BatchNorm2d(width * 2)
        self.head = nn.Linear(width * 2, {k})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Two convolutions, then global average pooling over the spatial dimensions.
        x = F.relu(self.conv1(x))
        x = F.relu(self.norm(self.conv2(x)))
        return self.head(x.mean(dim=(2, 3)))
''',
    '''

class PairDataset{i}(Dataset):
    """Pairs of random images and labels, generated on the host (not on the GPU)."""

    def __init__(self, size: int = {n}, seed: int = {i}) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.images = torch.randn(size, 3, 32, 32, generator=generator)
        self.labels = torch.randint(0, {k}, (size,), generator=generator)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.images[index], self.labels[index]
''',
    '''

def make_loader_{i}(batch_size: int = {b}, workers: int = 4) -> DataLoader:
    """The training loader; pinned memory speeds up host-to-device copies on CUDA."""
    dataset = PairDataset{j}(size={n})
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=workers,
                      pin_memory=True, drop_last=True)
''',
    '''

def train_epoch_{i}(model: nn.Module, loader: DataLoader, optimizer: torch.optim.Optimizer,
                    epoch: int) -> float:
    """One epoch of training. Logs the loss every {b} steps."""
    model.train()
    total = 0.0
    for step, (images, labels) in enumerate(loader):
        images = images.cuda(non_blocking=True)
        labels = labels.cuda(non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        total += loss.item()
        if step % {b} == 0:
            logger.info("epoch %d step %d: loss %.4f (cuda memory %.1f MB)", epoch, step,
                        loss.item(), torch.cuda.memory_allocated() / 2**20)
    torch.cuda.synchronize()
    return total / max(len(loader), 1)
''',
    '''

@torch.no_grad()
def evaluate_{i}(model: nn.Module, loader: DataLoader) -> dict[str, float]:
    """Accuracy and mean loss on a held-out loader. Runs on "cuda" like training does."""
    model.eval()
    correct, seen, total = 0, 0, 0.0
    for images, labels in loader:
        images, labels = images.to("cuda"), labels.to("cuda")
        logits = model(images)
        total += F.cross_entropy(logits, labels, reduction="sum").item()
        correct += (logits.argmax(dim=1) == labels).sum().item()
        seen += labels.numel()
    return {{"accuracy": correct / max(seen, 1), "loss": total / max(seen, 1)}}
''',
    '''

def set_seed_{i}(seed: int = {i}) -> None:
    """Seeds python, numpy and torch (all CUDA devices too) for a reproducible run."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
''',
    '''

def warmup_schedule_{i}(step: int, warmup: int = {w}, peak: float = 3e-4) -> float:
    # Linear warm-up, then cosine decay; nothing here touches the device.
    if step < warmup:
        return peak * step / warmup
    progress = min((step - warmup) / {n}, 1.0)
    return 0.5 * peak * (1.0 + math.cos(math.pi * progress))
''',
    '''

def save_checkpoint_{i}(model: nn.Module, path: str, epoch: int) -> None:
    """Saves the weights; the note below is prose, not code: "move the model to cuda first"."""
    state = {{"epoch": epoch, "model": model.state_dict(), "device": "cuda"}}
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    torch.save(state, path)
    logger.info("saved checkpoint for epoch %d to %s (trained on cuda)", epoch, path)


def load_checkpoint_{i}(model: nn.Module, path: str) -> int:
    state = torch.load(path, map_location="cuda:0")
    model.load_state_dict(state["model"])
    return int(state["epoch"])
''',
    '''

def run_experiment_{i}(epochs: int = 3) -> None:
    set_seed_{j}()
    model = Encoder{j}().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    scaler = torch.cuda.amp.GradScaler()
    loader = make_loader_{j}()
    start = time.time()
    for epoch in range(epochs):
        loss = train_epoch_{j}(model, loader, optimizer, epoch)
        metrics = evaluate_{j}(model, loader)
        logger.info("epoch %d: train loss %.4f, eval %s", epoch, loss, metrics)
    torch.cuda.empty_cache()
    logger.info("done in %.1f s on %s (scaler %s)", time.time() - start,
                torch.cuda.get_device_name(0), scaler)
''',
)

FOOTER = '''

def main() -> None:
    parser = argparse.ArgumentParser(description="Train on one CUDA GPU.")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    run_experiment_0(args.epochs)


if __name__ == "__main__":
    main()
'''


def training_file(lines: int, name: str = "baseline") -> str:
    """A training script of about `lines` lines (never fewer)."""
    parts = [HEADER.format(name=name)]
    count = HEADER.count("\n") + FOOTER.count("\n")
    index = 0
    while count < lines:
        group, kind = divmod(index, len(BLOCKS))
        block = BLOCKS[kind].format(i=group, j=group, c=3 + group % 2, w=32 + 8 * (group % 4),
                                    k=10 + group % 7, n=1000 + 100 * group, b=16 + group % 5)
        parts.append(block)
        count += block.count("\n")
        index += 1
    parts.append(FOOTER)
    return "".join(parts)


if __name__ == "__main__":
    sys.stdout.write(training_file(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))

"""A short training script the server checks while the editor waits for `initialize`: the
first check of a process fills what the rules compute once (tables, patterns, the parser's
first call), and the first document opened should not pay for that."""

from __future__ import annotations

SCRIPT = '''\
"""Fine-tune on one CUDA GPU (a docstring naming cuda, as real scripts do)."""
import argparse

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 2).cuda()

    def forward(self, x):
        return F.relu(self.fc(x.to("cuda:0")))


def train(args):
    torch.cuda.manual_seed_all(args.seed)
    model = Net().cuda()  # noqa: CUD102
    scaler = torch.cuda.amp.GradScaler()
    batch = torch.randn(4, 8, dtype=torch.float64, device="cuda").half()
    with torch.cuda.amp.autocast():
        loss = model(batch).sum()
    scaler.scale(loss).backward()
    torch.cuda.synchronize()
    print(torch.cuda.get_device_name(0), torch.cuda.max_memory_allocated())
    torch.cuda.empty_cache()
    return np.asarray(loss.item())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    train(parser.parse_args())
'''

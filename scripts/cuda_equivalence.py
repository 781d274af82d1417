"""Prove on a CUDA machine that `cudalint check --fix` kept the demo's behaviour.

    python scripts/cuda_equivalence.py ORIGINAL_DIR FIXED_DIR [--steps N] [--out DIR]

Runs `train.py` of the original and of the fixed demo with the same arguments, then compares
their printed metrics and their checkpoints tensor by tensor, bit for bit. Exit 0 when both
runs are identical, 1 when anything differs, 2 when a run failed. Needs CUDA (the original
only runs there); the fixed copy imports the standalone helper `_device.py` that `--fix` wrote
into it, so it needs nothing of cudalint.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import torch


def train(folder: Path, steps: int, out: Path, tag: str) -> dict[str, float]:
    metrics = out / f"{tag}-metrics.json"
    env = {**os.environ, "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    env.pop("CUDALINT_DEVICE", None)
    result = subprocess.run(
        [sys.executable, "train.py", "--steps", str(steps), "--out", str(metrics)],
        cwd=folder, env=env, capture_output=True, text=True, check=False)
    (out / f"{tag}-stdout.txt").write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        raise SystemExit(f"{tag}: train.py failed:\n{result.stderr[-2000:]}")
    return json.loads(metrics.read_text())


def checkpoint(folder: Path) -> dict[str, torch.Tensor]:
    state = torch.load(folder / "checkpoint.pt", map_location="cpu", weights_only=True)
    return state["model"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("original", type=Path)
    parser.add_argument("fixed", type=Path)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("needs CUDA: the original demo only runs there", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    original = train(args.original, args.steps, args.out, "original")
    fixed = train(args.fixed, args.steps, args.out, "fixed")
    print(f"original metrics: {original}\nfixed metrics:    {fixed}")
    same = original == fixed
    before, after = checkpoint(args.original), checkpoint(args.fixed)
    differing = [name for name in before
                 if name not in after or not torch.equal(before[name], after[name])]
    same = same and not differing and before.keys() == after.keys()
    print(f"checkpoint tensors: {len(before)}, bit-identical: {len(before) - len(differing)}")
    print("IDENTICAL" if same else f"DIFFERENT: {differing[:10]}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())

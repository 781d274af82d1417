"""Time every speed figure of issue 8 as a ratio to a reference timed in the same run.

    python benchmarks/bench_speed.py [--target DIR] [--repeat N] [--quick] [--lsp]

- 40 fixable findings vs 1, in a 1,200-line file (`--output-format json`): limit 1.5x
- `cudalint check` of one small CUDA file vs `python -c "import libcst"`: limit 2x
- a cold check of the torch package (or --target) vs `ruff check --select ALL --no-cache`:
  limit 3x (aim 1x)
- a second, cached check of it vs that cold ruff run: limit 0.3x (aim 0.1x)
- with --lsp, benchmarks/bench_lsp.py prints the language server's figures after these.

Machine speed cancels out of a ratio; the load of other processes does not: run it on a quiet
machine, and more than once (`--repeat`, medians). `--quick` skips the large tree.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CUDALINT = [sys.executable, "-m", "cudalint", "check", "--exit-zero"]


@dataclass(frozen=True)
class Figure:
    name: str
    seconds: float
    reference: str
    reference_seconds: float
    limit: float

    @property
    def ratio(self) -> float:
        return self.seconds / self.reference_seconds


def _time(command: Sequence[str], repeat: int, env: dict[str, str] | None = None) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False, env=env)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def training_script(cuda_calls: int, lines: int = 1200) -> str:
    """A training script of about `lines` lines with `cuda_calls` fixable `.cuda()` calls."""
    parts = ["import os\n\nimport torch\nimport torch.nn as nn\n\n"]
    index = 0
    while sum(part.count("\n") for part in parts) < lines:
        move = ".cuda()" if index < cuda_calls else ""
        parts.append(
            f"\n\ndef step_{index}(model, batch, optimizer):\n"
            f'    """Run training step {index} and return the loss."""\n'
            f"    inputs, targets = batch\n"
            f"    inputs = inputs{move}\n"
            f"    outputs = model(inputs)\n"
            f"    loss = nn.functional.mse_loss(outputs, targets)\n"
            f"    optimizer.zero_grad()\n"
            f"    loss.backward()\n"
            f"    optimizer.step()\n"
            f'    print(f"step {index}: {{loss.item():.3f}}")\n'
            f"    return loss\n"
        )
        index += 1
    if index < cuda_calls:
        raise ValueError(f"{lines} lines hold only {index} steps")
    return "".join(parts)


def findings_figure(folder: Path, repeat: int) -> Figure:
    one, forty = folder / "one.py", folder / "forty.py"
    one.write_text(training_script(1))
    forty.write_text(training_script(40))
    command = [*CUDALINT, "--no-cache", "--output-format", "json"]
    return Figure("1,200 lines: 40 fixable findings", _time([*command, str(forty)], repeat),
                  "the same file with 1", _time([*command, str(one)], repeat), 1.5)


def small_file_figure(folder: Path, repeat: int) -> Figure:
    small = folder / "small.py"
    small.write_text("import torch\n\nmodel = torch.nn.Linear(4, 2).cuda()\n"
                     "x = torch.zeros(3, device='cuda:0')\n")
    return Figure("one small CUDA file", _time([*CUDALINT, "--no-cache", str(small)], repeat),
                  'python -c "import libcst"',
                  _time([sys.executable, "-c", "import libcst"], repeat), 2.0)


def tree_figures(target: Path, repeat: int, cache: Path) -> list[Figure]:
    ruff = shutil.which("ruff")
    if ruff is None:
        print("ruff is not installed: no tree figures")
        return []
    reference = _time([ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero",
                       "--quiet", str(target)], repeat)
    name = "ruff check --select ALL --no-cache"
    cold = _time([*CUDALINT, "--no-cache", "--output-format", "concise", str(target)], repeat)
    env = {**os.environ, "CUDALINT_CACHE_DIR": str(cache)}
    command = [*CUDALINT, "--output-format", "concise", str(target)]
    _time(command, 1, env)  # fills the cache
    cached = _time(command, repeat, env)
    return [Figure(f"cold check of {target.name}", cold, name, reference, 3.0),
            Figure(f"cached check of {target.name}", cached, name, reference, 0.3)]


def _default_target() -> Path | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def _print(figures: Sequence[Figure]) -> None:
    print(f"\n{'figure':<36} {'s':>7}   {'reference':<36} {'s':>7} {'ratio':>7} {'limit':>6}"
          f" {'met':>4}")
    for f in figures:
        met = "yes" if f.ratio <= f.limit else "NO"
        print(f"{f.name:<36} {f.seconds:>7.2f}   {f.reference:<36} {f.reference_seconds:>7.2f}"
              f" {f.ratio:>6.2f}x {f.limit:>5.1f}x {met:>4}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=Path, default=None, help="default: the torch package")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--quick", action="store_true", help="skip the large tree")
    parser.add_argument("--lsp", action="store_true", help="also run benchmarks/bench_lsp.py")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (other processes "
          "skew every figure)")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        figures = [findings_figure(folder, args.repeat), small_file_figure(folder, args.repeat)]
        target = args.target or _default_target()
        if not args.quick and target is not None:
            figures += tree_figures(target, args.repeat, folder / "cache")
        _print(figures)
    if args.lsp and (ROOT / "benchmarks" / "bench_lsp.py").exists():
        print()
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_lsp.py")], check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

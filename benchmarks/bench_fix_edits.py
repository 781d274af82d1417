"""Time `cudalint check --output-format json` (fix edits wanted) on one 1,200-line file with 1
and with 40 fixable `.cuda()` calls: the import edit is computed once per file and shared, so
forty findings should cost about what one does (issue 9's check: at most 1.5 times).

    python benchmarks/bench_fix_edits.py [--lines 1200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _source(lines: int, findings: int) -> str:
    body = ["import torch", "from torch import nn", ""]
    while len(body) < lines - findings:
        i = len(body)
        body += [f"def layer_{i}(x):", f"    y = x * {i} + 1", "    return nn.functional.relu(y)",
                 ""]
    body += [f"t{i} = torch.ones(2).cuda()" for i in range(findings)]
    return "\n".join(body) + "\n"


def _time(path: Path, repeat: int) -> float:
    command = [sys.executable, "-m", "cudalint", "check", "--output-format", "json",
               "--select", "CUD102", "--no-cache", str(path)]
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        times = {}
        for findings in (1, 40):
            path = Path(folder) / f"big_{findings}.py"
            path.write_text(_source(args.lines, findings))
            times[findings] = _time(path, args.repeat)
    ratio = times[40] / times[1]
    print(f"{args.lines} lines, json output: 1 finding {times[1]:.2f} s, "
          f"40 findings {times[40]:.2f} s, ratio {ratio:.2f} (target <= 1.5)")
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())

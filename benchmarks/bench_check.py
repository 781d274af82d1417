"""Time a cold `cudalint check` of a large real tree against references run in the same session.

    python benchmarks/bench_check.py [--target DIR] [--repeat N]

The default target is the installed torch package (thousands of Python files, hundreds of them
mentioning CUDA). References: `ruff check --select ALL --no-cache` and `grep -rl cuda` over the
same tree, and a bare LibCST parse of the files cudalint's keyword pre-filter lets through.
Figures are printed as ratios to those references, which machine speed cancels out of.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import libcst as cst


def _default_target() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise SystemExit("torch is not installed: pass --target DIR")
    return Path(spec.origin).parent


def _time(command: list[str], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def _parse_time(files: list[Path]) -> float:
    start = time.perf_counter()
    for path in files:
        try:
            cst.parse_module(path.read_bytes())
        except Exception:
            continue
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    target = args.target or _default_target()
    python_files = sorted(target.rglob("*.py"))
    with_keyword = [p for p in python_files if b"cuda" in p.read_bytes()]
    print(f"target: {target}")
    print(f"python files: {len(python_files)}, mentioning 'cuda': {len(with_keyword)}")

    cudalint = [sys.executable, "-m", "cudalint", "check", str(target), "--exit-zero",
                "--output-format", "concise"]
    results = {"cudalint check (all rules, all file kinds)": _time(cudalint, args.repeat)}
    ruff = shutil.which("ruff")
    if ruff:
        results["ruff check --select ALL --no-cache"] = _time(
            [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", str(target)],
            args.repeat)
    results["grep -rl cuda"] = _time(["grep", "-rl", "cuda", str(target)], args.repeat)
    results["LibCST parse of the files with 'cuda'"] = _parse_time(with_keyword)

    base = results["cudalint check (all rules, all file kinds)"]
    print(f"\n{'run':<45} {'seconds':>9} {'cudalint / this':>16}")
    for name, seconds in results.items():
        print(f"{name:<45} {seconds:>9.2f} {base / seconds:>15.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

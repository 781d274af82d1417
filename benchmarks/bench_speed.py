"""Time every speed figure of issue 8 as a ratio to a reference timed in the same run.

    python benchmarks/bench_speed.py [--target DIR] [--repeat N] [--quick] [--whole-timeout S]
                                     [--lsp]

- 40 fixable findings vs 1, in a 1,200-line file (`--output-format json`): limit 1.5x; the
  time per extra fixable finding, from files with 1, 10 and 40 (timed in turn, at least 5 rounds)
- `cudalint check` of one small CUDA file vs `python -c "import libcst"`: limit 2x
- for `torch/nn` and for the whole torch package (or --target and its `nn`, when it has one):
  a cold check vs `ruff check --select ALL --no-cache`: limit 2.5x of ruff's CPU seconds for
  the package (issue 46; 3x for `nn`); a second, cached check vs that cold ruff run: limit
  0.1x for the package (0.3x for `nn`)
- with --lsp, benchmarks/bench_lsp.py prints the language server's figures after these.

A tree's cold check and ruff's are timed in turn, `--repeat` rounds (each cold check of the
whole package under `--whole-timeout` seconds: a run cut short prints its ratio as a lower
bound, `>`); the cached check runs after one more run has filled the cache.
Every command runs once untimed first, with bytecode writing allowed, so that start-up is
timed as an installed cudalint starts (from .pyc files), not as it compiles its sources.
cudalint is timed as the `cudalint` console script installed beside this Python, as users run
it (and ruff as its executable), else as `python -m cudalint`.

Each figure is given in CPU seconds (user and system time of the process and its children,
from `getrusage(RUSAGE_CHILDREN)`) beside wall seconds; a limit is judged on the CPU ratio,
which the load of other processes on a shared machine skews far less than the wall ratio
(cudalint keeps both cores busy where ruff uses one and a third). Machine speed cancels out
of a ratio: run it more than once (`--repeat`, medians); it prints the load with each figure.
`--quick` skips the trees.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import itertools
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cudalint() -> list[str]:
    """The `cudalint` console script installed beside this Python, what users run (ruff is
    timed as its executable too); `python -m cudalint` where there is none (runpy costs that
    a few milliseconds more)."""
    script = Path(sys.executable).with_name("cudalint")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "cudalint"]


CUDALINT = [*_cudalint(), "check", "--exit-zero"]
# Start-up as installed: from bytecode (PYTHONDONTWRITEBYTECODE would time a compile instead).
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


@dataclass(frozen=True)
class Figure:
    name: str
    seconds: float
    reference: str
    reference_seconds: float
    limit: float
    cut_short: bool = False  # stopped at its timeout: the ratio is a lower bound
    cpu: float = 0.0  # CPU seconds (user + system, children included), medians
    reference_cpu: float = 0.0
    # The 1-minute load average when the figure was taken (other processes skew it).
    load: float = field(default_factory=lambda: os.getloadavg()[0])

    @property
    def ratio(self) -> float:
        return self.seconds / self.reference_seconds

    @property
    def cpu_ratio(self) -> float:
        return self.cpu / self.reference_cpu if self.reference_cpu else self.ratio


def _run(command: Sequence[str], env: dict[str, str] | None = None,
         timeout: float | None = None) -> tuple[float, float]:
    """The wall and CPU seconds of one run (CPU: user and system time of the process and its
    children, which a run waited for; a run stopped at `timeout` counts as far as it got)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with contextlib.suppress(subprocess.TimeoutExpired):
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False, env=env or ENV, timeout=timeout)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _times(command: Sequence[str], repeat: int, env: dict[str, str] | None = None,
           timeout: float | None = None) -> tuple[float, float]:
    """The median wall and CPU seconds of `repeat` runs."""
    runs = [_run(command, env, timeout) for _ in range(repeat)]
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def _time(command: Sequence[str], repeat: int, env: dict[str, str] | None = None,
          timeout: float | None = None) -> float:
    """The median wall time of `repeat` runs (a run stopped at `timeout` counts as that)."""
    return _times(command, repeat, env, timeout)[0]


def _warm(command: Sequence[str]) -> None:
    """One untimed run: bytecode written, files in the page cache."""
    _time(command, 1)


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


FINDING_COUNTS = (1, 10, 40)
# Checks one file again and again in one process, started once: what the check itself costs,
# without the start-up that every command-line run pays alike.
_IN_PROCESS = """
import contextlib, io, sys, time
from cudalint.cli import main
rounds, paths = int(sys.argv[1]), sys.argv[2:]
times = {path: [] for path in paths}
for _ in range(rounds + 1):  # the first round imports the rules
    for path in paths:
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            main(["check", "--exit-zero", "--no-cache", "-j", "1", "--output-format", "json",
                  path])
        times[path].append(time.perf_counter() - start)
for path in paths:
    print(*times[path][1:])
"""


def findings_figure(folder: Path, repeat: int) -> Figure:
    """40 fixable findings vs 1, and what each extra fixable finding costs (1, 10 and 40 of
    them). The files are timed in turn, round after round, so that a change in the machine's
    load hits them alike; each time is the median of at least 5 rounds."""
    command = [*CUDALINT, "--no-cache", "--output-format", "json"]
    paths = {count: folder / f"findings_{count}.py" for count in FINDING_COUNTS}
    for count, path in paths.items():
        path.write_text(training_script(count))
        _warm([*command, str(path)])
    rounds = max(repeat, 5)
    runs: dict[int, list[float]] = {count: [] for count in FINDING_COUNTS}
    cpu: dict[int, list[float]] = {count: [] for count in FINDING_COUNTS}
    for _ in range(rounds):
        for count, path in paths.items():
            wall, used = _run([*command, str(path)])
            runs[count].append(wall)
            cpu[count].append(used)
    seconds = {count: statistics.median(times) for count, times in runs.items()}
    first, last = FINDING_COUNTS[0], FINDING_COUNTS[-1]
    ratios = sorted(b / a for a, b in zip(runs[first], runs[last], strict=True))
    print(f"fixable findings, each a median of {rounds} rounds ({_load()}):")
    print(f"  command line: {_increments(seconds)}; {last} vs {first} round by round "
          f"{ratios[0]:.2f}x to {ratios[-1]:.2f}x")
    print(f"  in one process, start-up left out: {_increments(_in_process(paths, rounds))}")
    return Figure(f"1,200 lines: {last} fixable findings", seconds[last],
                  f"the same file with {first}", seconds[first], 1.5,
                  cpu=statistics.median(cpu[last]), reference_cpu=statistics.median(cpu[first]))


def _in_process(paths: dict[int, Path], rounds: int) -> dict[int, float]:
    done = subprocess.run([sys.executable, "-c", _IN_PROCESS, str(rounds),
                           *(str(path) for path in paths.values())],
                          capture_output=True, text=True, check=True, env=ENV)
    lines = done.stdout.splitlines()
    return {count: statistics.median(float(t) for t in line.split())
            for count, line in zip(paths, lines, strict=True)}


def _increments(seconds: dict[int, float]) -> str:
    """The times, and the cost of each extra finding between one count and the next."""
    counts = sorted(seconds)
    times = ", ".join(f"{count}: {seconds[count] * 1000:.0f} ms" for count in counts)
    steps = ", ".join(f"{(seconds[b] - seconds[a]) / (b - a) * 1000:+.1f} ms each from {a} to {b}"
                      for a, b in itertools.pairwise(counts))
    return f"{times} ({steps})"


def small_file_figure(folder: Path, repeat: int) -> Figure:
    small = folder / "small.py"
    small.write_text("import torch\n\nmodel = torch.nn.Linear(4, 2).cuda()\n"
                     "x = torch.zeros(3, device='cuda:0')\n")
    _warm([*CUDALINT, "--no-cache", str(small)])
    _warm([sys.executable, "-c", "import libcst"])
    subject, reference = [], []
    for _ in range(repeat):  # in turn, as the trees
        subject.append(_run([*CUDALINT, "--no-cache", str(small)]))
        reference.append(_run([sys.executable, "-c", "import libcst"]))
    return Figure("one small CUDA file", _median(subject, 0), 'python -c "import libcst"',
                  _median(reference, 0), 2.0, cpu=_median(subject, 1),
                  reference_cpu=_median(reference, 1))


def _median(runs: Sequence[tuple[float, float]], index: int) -> float:
    return statistics.median(run[index] for run in runs)


def tree_figures(target: Path, repeat: int, cache: Path,
                 cold_timeout: float | None = None) -> list[Figure]:
    """A cold and a cached check of `target`, each against ruff's cold check of it. The cold
    checks and ruff's are timed in turn, round after round, so that a change in the machine's
    speed (which drifts by a third within minutes on a shared machine) hits both alike; the
    figure is the median of each, and the rounds' own ratios are printed beside it."""
    ruff = shutil.which("ruff")
    if ruff is None:
        print("ruff is not installed: no tree figures")
        return []
    ruff_command = [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "--quiet",
                    str(target)]
    _warm(ruff_command)
    name = "ruff check --select ALL --no-cache"
    label = target.name if target.name != "torch" else "the torch package"
    env = {**ENV, "CUDALINT_CACHE_DIR": str(cache)}
    command = [*CUDALINT, "--output-format", "concise", str(target)]
    cold_command = [*CUDALINT, "--no-cache", "--output-format", "concise", str(target)]
    if cold_timeout is None:
        _warm(cold_command)
    references, colds = [], []
    for _ in range(repeat):
        references.append(_run(ruff_command))
        colds.append(_run(cold_command, timeout=cold_timeout))
        print(f"  round {len(colds)} ({_load()}): cudalint {colds[-1][0]:.2f} s "
              f"(CPU {colds[-1][1]:.2f} s), ruff {references[-1][0]:.2f} s "
              f"(CPU {references[-1][1]:.2f} s)", flush=True)
    reference, cold = _median(references, 0), _median(colds, 0)
    cut_short = cold_timeout is not None and cold >= cold_timeout
    ratios = sorted(c[0] / r[0] for c, r in zip(colds, references, strict=True))
    cpu_ratios = sorted(c[1] / r[1] for c, r in zip(colds, references, strict=True))
    print(f"cold check of {label}, {repeat} alternated rounds ({_load()}): round by round "
          f"wall {ratios[0]:.2f}x to {ratios[-1]:.2f}x, CPU {cpu_ratios[0]:.2f}x to "
          f"{cpu_ratios[-1]:.2f}x")
    whole = label == "the torch package"
    figures = [Figure(f"cold check of {label}", cold, name, reference, 2.5 if whole else 3.0,
                      cut_short, cpu=_median(colds, 1), reference_cpu=_median(references, 1))]
    if cut_short:
        print(f"the cold check of {label} was stopped: no cached figure")
        return figures
    filled = _time(command, 1, env, timeout=cold_timeout)
    print(f"  the first check with the cache, which fills it: {filled:.2f} s "
          f"({filled / reference:.2f}x)")
    cached, cached_cpu = _times(command, repeat, env)
    return [*figures, Figure(f"cached check of {label}", cached, name, reference,
                             0.1 if whole else 0.3, cpu=cached_cpu,
                             reference_cpu=_median(references, 1))]


def _default_target() -> Path | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def _print(figures: Sequence[Figure]) -> None:
    """Each figure's wall and CPU seconds, and their ratios to the reference's; the limit is
    judged on the CPU ratio."""
    print(f"\n{'figure':<40} {'s':>6} {'CPU s':>6}   {'reference':<36} {'s':>6} {'CPU s':>6}"
          f" {'ratio':>7} {'CPU':>7} {'limit':>6} {'met':>4} {'load':>5}")
    for f in figures:
        met = "yes" if f.cpu_ratio <= f.limit else "NO"
        bound = ">" if f.cut_short else ""
        print(f"{f.name:<40} {f.seconds:>6.2f} {f.cpu:>6.2f}   {f.reference:<36} "
              f"{f.reference_seconds:>6.2f} {f.reference_cpu:>6.2f} "
              f"{bound + format(f.ratio, '.2f') + 'x':>7} "
              f"{bound + format(f.cpu_ratio, '.2f') + 'x':>7} {f.limit:>5.1f}x {met:>4} "
              f"{f.load:>5.1f}")


def _load() -> str:
    return f"load average {os.getloadavg()[0]:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=Path, default=None, help="default: the torch package")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--quick", action="store_true", help="skip the trees")
    parser.add_argument("--whole-timeout", type=float, default=600.0,
                        help="seconds the cold check of the whole package may take")
    parser.add_argument("--lsp", action="store_true", help="also run benchmarks/bench_lsp.py")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, {_load()} (other processes skew every figure); "
          f"cudalint timed as `{' '.join(CUDALINT[:-2])}`")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        figures = [findings_figure(folder, args.repeat), small_file_figure(folder, args.repeat)]
        target = args.target or _default_target()
        if not args.quick and target is not None:
            if (target / "nn").is_dir():
                figures += tree_figures(target / "nn", args.repeat, folder / "nn-cache")
            figures += tree_figures(target, args.repeat, folder / "cache", args.whole_timeout)
        _print(figures)
    print(f"after: {_load()}")
    if args.lsp and (ROOT / "benchmarks" / "bench_lsp.py").exists():
        print()
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_lsp.py")], check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

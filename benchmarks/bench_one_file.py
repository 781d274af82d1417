"""A pre-commit run of one file in a large repository (issue 40): `cudalint check
--force-exclude pkg/sub_7/mod_3.py` in a generated tree of 2,000 Python files (by default),
timed against the same run of another cudalint (default: the commit before issue 40, 84b8114,
checked out with `git worktree` into a temporary folder) in the same minutes.

Since issue 40, a run reads its project's facts from the whole project (a class's own `cuda`
method, `torch._six`, nested setup.py files), not from the files it was given: a scan of the
project's Python files, each read once and then known from the scan's cache by its status.
Limit: 1.5x the reference, with the cache (pre-commit's case: the hook runs again and again)
and without it (`--no-cache`: every file read).

    python benchmarks/bench_one_file.py [--rounds 7] [--files 2000] [--reference SRC]

Each round runs the two in turn (alternating which goes first); the figure is the ratio of
medians, in wall seconds and in CPU seconds (user + system of the child). Exit 1 when a
ratio is over the limit.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE_COMMIT = "84b8114"
LIMIT = 1.5

MODULE = '''"""Module {i} of the generated project."""

import torch
import torch.nn as nn

from pkg.sub_{s} import helpers


class Block{i}(nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(torch.relu(self.linear(x)) + x)


def build(width: int = 64) -> Block{i}:
    model = Block{i}(width)
    if torch.cuda.is_available():
        model = model.cuda()
    return helpers.init(model)
'''
HELPERS = "def init(model):\n    return model\n"
STAGED = '''import torch

from pkg.sub_{s} import helpers


def train_step(model, batch):
    batch = batch.to("cuda")
    loss = model(batch).sum()
    loss.backward()
    torch.cuda.synchronize()
    return helpers.init(loss)
'''


def make_tree(folder: Path, files: int) -> tuple[Path, str]:
    """A project of `files` Python files (pyproject.toml, .git, `pkg/sub_N/mod_M.py`), and
    the file a commit stages: `pkg/sub_7/mod_3.py` (an earlier folder in a small tree)."""
    root = folder / "big_repo"
    (root / ".git").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "big-repo"\nversion = "1.0"\n'
                                         'dependencies = ["torch>=2.1"]\n')
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    per_folder, written, s = 40, 1, 0
    while written < files:
        sub = root / "pkg" / f"sub_{s}"
        sub.mkdir()
        (sub / "__init__.py").write_text("")
        (sub / "helpers.py").write_text(HELPERS)
        written += 2
        for i in range(min(per_folder, files - written)):
            (sub / f"mod_{i}.py").write_text(MODULE.format(i=i, s=s))
            written += 1
        s += 1
    staged = min(7, s - 1)
    (root / "pkg" / f"sub_{staged}" / "mod_3.py").write_text(STAGED.format(s=staged))
    time.sleep(2.5)  # settled, as a repository's files are: the caches record a file's
    # status only two seconds after its last change (cache.file_status)
    return root, f"pkg/sub_{staged}/mod_3.py"


def reference_source(given: Path | None, scratch: Path) -> Path:
    """The `src` folder of the reference cudalint: given, or a worktree of BASE_COMMIT."""
    if given is not None:
        return given
    tree = scratch / "reference"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree),
                    BASE_COMMIT], check=True, capture_output=True)
    return tree / "src"


def timed(source: Path, root: Path, args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one `cudalint check ARGS` run in `root`, from `source`."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cudalint", "check", *args], cwd=root,
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"cudalint {' '.join(args)} ({source}) exited {done.returncode}: "
                         f"{done.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compare(name: str, sources: dict[str, Path], root: Path, args: list[str],
            rounds: int) -> list[float]:
    """Median wall and CPU seconds of each source, alternated round after round."""
    walls: dict[str, list[float]] = {label: [] for label in sources}
    cpus: dict[str, list[float]] = {label: [] for label in sources}
    labels = list(sources)
    for round_ in range(rounds):
        for label in labels if round_ % 2 == 0 else labels[::-1]:
            wall, cpu = timed(sources[label], root, args)
            walls[label].append(wall)
            cpus[label].append(cpu)
    new, old = labels
    ratios = []
    print(f"{name} (`cudalint check {' '.join(args)}`, median of {rounds}):")
    for what, figures in (("wall", walls), ("CPU", cpus)):
        n, o = statistics.median(figures[new]), statistics.median(figures[old])
        ratios.append(n / o)
        print(f"  {what:4}: this cudalint {n:.3f} s, reference {o:.3f} s: {n / o:.2f}x "
              f"(limit {LIMIT}x)")
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--reference", type=Path, default=None,
                        help="the src folder of the cudalint to compare with (default: a "
                             f"worktree of {BASE_COMMIT})")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="cudalint-one-file-"))
    made_worktree = args.reference is None
    try:
        root, staged = make_tree(scratch, args.files)
        count = sum(1 for _ in root.rglob("*.py"))
        sources = {"this": ROOT / "src", "reference": reference_source(args.reference, scratch)}
        print(f"a tree of {count} Python files; the staged file: {staged}; load "
              f"{os.getloadavg()[0]:.1f}")
        for source in sources.values():
            # bytecode compiled, as an installed cudalint has it (PYTHONDONTWRITEBYTECODE
            # would leave a fresh worktree compiling every module on every run)
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(source)], check=True)
            timed(source, root, ["--force-exclude", staged])  # fill its caches, as pre-commit
            # had run before
        ratios = compare("with the cache, filled by an earlier run", sources, root,
                         ["--force-exclude", staged], args.rounds)
        ratios += compare("without the cache", sources, root,
                          ["--no-cache", "--force-exclude", staged], args.rounds)
    finally:
        if made_worktree:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(scratch / "reference")], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if any(ratio > LIMIT for ratio in ratios) else 0


if __name__ == "__main__":
    sys.exit(main())

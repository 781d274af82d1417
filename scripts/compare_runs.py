"""Check that a change to the engine loses no finding and no fix: run two source trees of
cudalint over the same paths (`check --no-cache --output-format json`) and compare the output
byte for byte.

    python scripts/compare_runs.py --before /path/to/old/src --after src fixtures/ "$TORCH_DIR"

`--before`/`--after` are the folders holding the `cudalint` package (a worktree's `src`).
Each path is checked in a run of its own (a run takes its configuration from its first path).
Exits 0 when the outputs are identical, 1 with the first differing findings otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def run(source: Path, paths: list[str], jobs: int | None) -> tuple[bytes, float]:
    """cudalint's JSON output from the package under `source`, and the seconds it took."""
    env = {**os.environ, "PYTHONPATH": str(source.resolve()), "CUDALINT_NO_CACHE": "1"}
    command = [sys.executable, "-m", "cudalint", "check", "--no-cache", "--exit-zero",
               "--output-format", "json", *(["--jobs", str(jobs)] if jobs else []), *paths]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"cudalint from {source} failed ({done.returncode}): "
                         f"{done.stderr.decode(errors='replace').strip()[-500:]}")
    return done.stdout, elapsed


def differences(before: bytes, after: bytes, limit: int = 5) -> list[str]:
    """The findings only one side has (at most `limit` per side), compared as JSON objects."""
    old = [json.dumps(f, sort_keys=True) for f in json.loads(before)]
    new = [json.dumps(f, sort_keys=True) for f in json.loads(after)]
    old_set, new_set = set(old), set(new)
    only_old = [f for f in old if f not in new_set]
    only_new = [f for f in new if f not in old_set]
    lines = [f"{len(old)} findings before, {len(new)} after"]
    lines += [f"- {f}" for f in only_old[:limit]] + [f"+ {f}" for f in only_new[:limit]]
    if not only_old and not only_new:
        lines.append("the same findings, in another order")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="src folder of the reference")
    parser.add_argument("--after", type=Path, required=True, help="src folder of the change")
    parser.add_argument("--jobs", type=int, default=None, help="cudalint's --jobs")
    parser.add_argument("paths", nargs="+", help="files or folders to check")
    args = parser.parse_args(argv)
    # One run per path: a project's configuration comes from the first path of a run.
    return max(_compare(args.before, args.after, path, args.jobs) for path in args.paths)


def _compare(before_src: Path, after_src: Path, path: str, jobs: int | None) -> int:
    before, before_s = run(before_src, [path], jobs)
    after, after_s = run(after_src, [path], jobs)
    count = len(json.loads(before))
    print(f"{path}: {count} findings; before {before_s:.1f} s, after {after_s:.1f} s")
    if before == after:
        print(f"  identical ({len(before)} bytes)")
        return 0
    print("\n".join(f"  {line}" for line in differences(before, after)))
    return 1

if __name__ == "__main__":
    raise SystemExit(main())

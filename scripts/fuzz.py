"""The long fuzz run: hypothesmith programs with CUDA lines spliced in, checked and fixed.

    python scripts/fuzz.py --examples 2000 [--seed 7]

It says how far it is every 50 programs (on stderr), and `kill -USR1 <pid>` prints where it
is (every thread's stack), for a run that seems to stand still.

The CI test (tests/engine/test_fuzz.py) runs the same properties on a small, derandomized sample.
"""

from __future__ import annotations

import argparse
import faulthandler
import signal
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.engine.fuzzing import check_properties, programs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    started, tried = time.monotonic(), [0]

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def run(source: str) -> None:
        tried[0] += 1
        if tried[0] % 50 == 0:
            print(f"{tried[0]} programs tried, {time.monotonic() - started:.0f} s",
                  file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory() as folder:
            check_properties(Path(folder), source)

    run()
    print(f"{args.examples} generated programs: every property held")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

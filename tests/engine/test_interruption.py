"""Ctrl-C: nothing new starts, the file in flight is finished, the files written are listed,
exit 130; worker processes end with the process that started them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from cudalint.cli import main
from cudalint.engine.running import pool, runner
from tests.engine.fixing_run import GOOD, assert_fixed

SOURCE = str(Path(__file__).parents[2] / "src")


def test_ctrl_c_lists_the_files_written_and_exits_130(tmp_path, capsys, monkeypatch):
    files = [tmp_path / f"{name}.py" for name in ("a", "b", "c")]
    for path in files:
        path.write_text(GOOD)
    check_file = runner.check_file

    def interrupted_at_b(path, *args, **kwargs):
        if path.name == "b.py":
            raise KeyboardInterrupt
        return check_file(path, *args, **kwargs)

    monkeypatch.setattr(runner, "check_file", interrupted_at_b)
    assert main(["check", "--fix", str(tmp_path)]) == 130
    captured = capsys.readouterr()
    assert captured.err == f"cudalint: interrupted; 1 file written:\n  {files[0]}\n"
    assert_fixed(files[0])
    assert files[1].read_text() == GOOD and files[2].read_text() == GOOD


def _item(number: int) -> int:
    if number == 3:
        os.kill(os.getppid(), signal.SIGINT)  # Ctrl-C reaching the main process
    time.sleep(0.05)
    return number


def test_the_pool_stops_scheduling_and_returns_what_finished():
    results, interrupted = pool.run_all(_item, list(range(200)), jobs=2)
    assert interrupted
    assert 3 in results  # the chunk in flight was finished
    assert len(results) < 200 and results == sorted(results)


def test_workers_die_with_their_parent(tmp_path):
    script = textwrap.dedent(f"""
        import os, signal, threading, time
        from cudalint.engine.running import pool

        def record(number):
            open(os.path.join({str(tmp_path)!r}, str(os.getpid())), "w").close()
            time.sleep(120)

        def kill_self():
            while len(os.listdir({str(tmp_path)!r})) < 2:
                time.sleep(0.1)
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=kill_self, daemon=True).start()
        pool.run_all(record, list(range(2 * pool.CHUNK)), jobs=2)
    """)
    subprocess.run([sys.executable, "-c", script], timeout=120,
                   env={**os.environ, "PYTHONPATH": SOURCE})
    workers = [int(name) for name in os.listdir(tmp_path)]
    assert len(workers) == 2
    deadline = time.monotonic() + 20
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(_alive, workers))


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status

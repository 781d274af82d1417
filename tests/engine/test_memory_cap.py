"""max-memory holds in a run of a few files too (issue 31, item 14): one that checks in its own
process (fewer than 32 files, no -j) sends a file that may need more than max-memory (at the
most a check was measured to take per byte) to a worker capped at it, instead of checking it
in a process with no cap; files that cannot need that much are still checked in-process."""

from __future__ import annotations

import pytest

from cudalint.engine.reading.reader import MOST_MEMORY_PER_SOURCE_BYTE
from cudalint.engine.running.runner import KILL_WORKER_ON
from tests.engine.fixing_run import GOOD, assert_fixed, good_file, run

MAX_MEMORY = 100_000_000
# 100 kB of dense code: predicted 70 MB (under max-memory: not skipped), LibCST takes about
# 200 MB, more than max-memory.
DENSE = GOOD + "".join(f"x{n} = f(a.b[1], c + 2 * d, e=3)\n" for n in range(3000))


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text(f"[tool.cudalint]\nmax-memory = {MAX_MEMORY}\n")
    return tmp_path


@pytest.mark.parametrize("mode", ["--fix", "--diff"])
def test_a_dense_file_in_a_small_run_is_stopped_at_max_memory(project, capsys, quiet_crashes,
                                                               mode):
    dense = project / "dense.py"
    dense.write_text(DENSE)
    assert len(DENSE) * MOST_MEMORY_PER_SOURCE_BYTE > MAX_MEMORY > len(DENSE) * 700
    good = good_file(project)
    outcome = run(capsys, "check", mode, "--no-cache", str(project))
    assert outcome.errors(dense.name) in (
        ["out of memory while checking this file; not checked"],  # MemoryError in Python
        ["the checker process died (signal 6, SIGABRT, most likely out of memory (max-memory)) "
         "while checking this file; not checked"])  # the parser could not allocate
    assert outcome.code == 2
    assert dense.read_text() == DENSE
    if mode == "--fix":
        assert_fixed(good)


def test_small_files_are_still_checked_in_this_process(project, capsys, monkeypatch):
    """The test hook that kills a worker on a file is ignored in this process."""
    good = good_file(project)
    monkeypatch.setenv(KILL_WORKER_ON, good.name)
    outcome = run(capsys, "check", "--fix", "--no-cache", str(project))
    assert outcome.errors(good.name) == []
    assert_fixed(good)

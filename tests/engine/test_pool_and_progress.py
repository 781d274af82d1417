"""How many processes a run uses, and when it draws a progress bar (the decision, not pixels)."""

from __future__ import annotations

import io

import pytest

from cudalint.engine.running.runner import pool_size
from cudalint.output.progress import DelayedProgress, wants_progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _not_under_pre_commit(monkeypatch):
    monkeypatch.delenv("PRE_COMMIT", raising=False)


def test_the_pool_scales_with_cores_and_files(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert pool_size(None, 10_000) == 8
    assert pool_size(None, 40) == 2  # a process for every 16 files at most
    assert pool_size(None, 5) == 1
    assert pool_size(3, 10_000) == 3


def test_pre_commit_gets_one_process_per_hook(monkeypatch):
    """pre-commit already runs one hook process per core, each on a share of the files."""
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.setenv("PRE_COMMIT", "1")
    assert pool_size(None, 10_000) == 1
    assert pool_size(4, 10_000) == 4  # asked for explicitly


@pytest.mark.parametrize(("output_format", "quiet", "stdout", "expected"), [
    ("full", False, _Terminal(), True),
    ("concise", False, _Terminal(), True),
    ("full", False, io.StringIO(), False),  # piped
    ("json", False, _Terminal(), False),
    ("sarif", False, _Terminal(), False),
    ("github", False, _Terminal(), False),
    ("full", True, _Terminal(), False),
])
def test_a_bar_only_for_a_person_at_a_terminal(output_format, quiet, stdout, expected):
    assert wants_progress(output_format, quiet, stdout, _Terminal()) is expected


def test_no_bar_on_a_piped_stderr():
    assert not wants_progress("full", False, _Terminal(), io.StringIO())


def test_the_bar_appears_after_a_second_only():
    now = [0.0]
    progress = DelayedProgress(_Terminal(), clock=lambda: now[0])
    progress(1, 100)
    now[0] = 0.9
    progress(50, 100)
    assert not progress.shown
    now[0] = 1.2
    progress(60, 100)
    assert progress.shown
    progress(100, 100)
    progress.close()


def test_a_run_that_ends_early_shows_no_bar():
    now = [5.0]
    progress = DelayedProgress(_Terminal(), clock=lambda: now[0] + 2)
    progress(3, 3)
    assert not progress.shown


def test_workers_take_the_largest_files_first_and_reports_keep_path_order(tmp_path, monkeypatch):
    """The last file a worker checks is a small one, so the processes end together; the
    reports come back in path order all the same."""
    from cudalint.engine.checkers import job
    from cudalint.engine.running import pool, runner

    sizes = {"a.py": 10, "b.py": 3_000, "c.py": 300, "d.py": 30_000}
    for name, size in sizes.items():
        (tmp_path / name).write_text("x = 1\n" + "#" * size + "\n")
    tasks = [(tmp_path / name, "python", (), None, None) for name in sizes]
    sent: list[str] = []

    def run_all(function, items, jobs, progress, **_kwargs):
        sent.extend(item[0].name for item in items)
        return [job.FileReport(item[0], []) for item in items], False

    monkeypatch.setattr(pool, "run_all", run_all)
    reports = runner.check_all(tasks, jobs=2)  # type: ignore[arg-type]
    assert sent == ["d.py", "b.py", "c.py", "a.py"]
    assert [r.path.name for r in reports] == ["a.py", "b.py", "c.py", "d.py"]
    sent.clear()
    runner.check_all(tasks, jobs=1)  # type: ignore[arg-type]
    assert sent == ["a.py", "b.py", "c.py", "d.py"]

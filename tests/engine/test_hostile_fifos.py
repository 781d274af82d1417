"""Hostile trees, round three, read side: a FIFO named like a module anywhere in the tree, or
at the device helper's place, and a non-regular file in the cache (a FIFO, a link to
/dev/zero) never block a run: every read goes through the one reader (cudalint.files)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.engine.running.cache import FOLDER
from tests.engine.fixing_run import GOOD, assert_fixed, run


@pytest.fixture
def alarm():
    """Fail, rather than hang the suite, when a run blocks (a FIFO opened for reading)."""
    def expired(_number, _frame):  # not TimeoutError: an OSError, which readers catch
        pytest.fail("the run blocked")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A project whose fixable file is in a package: placing its helper reads what the
    project's modules import."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "train.py").write_text(GOOD)
    (root / "main.py").write_text("from pkg import train\n")
    return root


@pytest.mark.parametrize("where", ["pkg/pipe.py", "pipe.py", "tools/pipe.py"])
@pytest.mark.parametrize("mode", ["--fix", "--diff"])
def test_a_fifo_module_anywhere_does_not_block_fix_or_diff(package, capsys, alarm, where, mode):
    (package / where).parent.mkdir(exist_ok=True)
    os.mkfifo(package / where)
    if mode == "--diff":
        assert main(["check", mode, "--no-cache", str(package)]) == 2  # a file not checked
        out, err = capsys.readouterr()
        assert "+model = Net().to(pick_device())" in out
        assert "pipe.py:1:1: not a regular file (a FIFO); skipped" in out + err
        return
    outcome = run(capsys, "check", mode, "--no-cache", str(package))
    assert outcome.errors("pipe.py") == ["not a regular file (a FIFO); skipped"]
    assert_fixed(package / "pkg" / "train.py")
    assert (package / "pkg" / "_device.py").is_file()


@pytest.mark.parametrize("mode", ["--fix", "--diff"])
def test_a_fifo_at_the_helpers_place_does_not_block_and_is_not_imported(package, capsys,
                                                                          alarm, mode):
    os.mkfifo(package / "pkg" / "_device.py")
    outcome = run(capsys, "check", mode, "--no-cache", str(package))
    assert outcome.code == 2
    [error] = outcome.errors("train.py")
    assert "_device.py" in error and "not a regular file" in error, error
    assert (package / "pkg" / "train.py").read_text() == GOOD
    assert os.path.exists(package / "pkg" / "_device.py")


@pytest.fixture
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project checked once with the cache on (its key in the user's cache folder)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.delenv("CUDALINT_CACHE_DIR", raising=False)
    monkeypatch.delenv("CUDALINT_NO_CACHE", raising=False)
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "train.py").write_text(GOOD)
    monkeypatch.chdir(root)
    return root


def _replace(path: Path, how: str) -> None:
    path.unlink()
    if how == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


@pytest.mark.parametrize("how", ["fifo", "dev-zero"])
@pytest.mark.parametrize("what", ["text", "index", "key"])
def test_a_non_regular_file_in_the_cache_does_not_block_check(cached, capsys, alarm, how,
                                                              what):
    first = run(capsys, "check", ".")
    assert first.codes("train.py")
    if what == "key":
        [entry] = [Path(os.environ["XDG_CACHE_HOME"]) / "cudalint" / "key"]
    else:
        [entry] = (cached / FOLDER).glob("text/*.txt" if what == "text" else "index-*.json")
    _replace(entry, how)
    again = run(capsys, "check", ".")
    assert (again.code, again.findings) == (first.code, first.findings)

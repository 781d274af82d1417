"""Hostile writes, round three: a file rewritten in place (another hard link to it, an
attribute a new file cannot take) on a full disk or under `ulimit -f` is left as it was, byte
for byte, and "not written" is said only where nothing was written."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cudalint.writing import WriteError, write_fixed

SOURCE = str(Path(__file__).parents[2] / "src")
ORIGINAL = b"".join(b"model_%d = Net().cuda()  # line %d\n" % (n, n) for n in range(200))
FIXED = ORIGINAL.replace(b".cuda()", b".to(pick_device())")


def _linked(tmp_path: Path) -> tuple[Path, Path]:
    path = tmp_path / "train.py"
    path.write_bytes(ORIGINAL)
    twin = tmp_path / "twin.py"
    os.link(path, twin)
    return path, twin


def test_ulimit_f_stops_an_in_place_rewrite_before_it_touches_the_file(tmp_path):
    """A limit between the old size and the new one, on a file with another hard link (which
    only a rewrite in place keeps): the old code wrote up to the limit from offset 0 and left
    the file cut there, saying "not written"."""
    path, twin = _linked(tmp_path)
    script = textwrap.dedent(f"""
        import resource
        from pathlib import Path
        from cudalint.writing import WriteError, write_fixed

        resource.setrlimit(resource.RLIMIT_FSIZE, ({len(ORIGINAL) + 100}, resource.RLIM_INFINITY))
        try:
            write_fixed(Path({str(path)!r}), {FIXED!r}, {ORIGINAL!r})
        except WriteError as error:
            print(error)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": SOURCE})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("not written: File too large"), done.stdout
    assert path.read_bytes() == ORIGINAL and twin.read_bytes() == ORIGINAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py", "twin.py"]


def _failing_on(inode: int, *, after: int, always: bool = False):
    """os.pwrite that writes `after` bytes into the file of `inode`, then fails as a full disk
    does (every later write too where `always`)."""
    real = os.pwrite
    calls = []

    def pwrite(descriptor: int, data, offset: int) -> int:
        if os.fstat(descriptor).st_ino != inode:
            return real(descriptor, data, offset)
        calls.append(offset)
        if len(calls) == 1:
            return real(descriptor, bytes(data[:after]), offset)
        if len(calls) == 2 or always:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(descriptor, data, offset)
    return pwrite


def test_a_rewrite_failing_half_way_is_undone_byte_for_byte(tmp_path, monkeypatch):
    path, twin = _linked(tmp_path)
    monkeypatch.setattr(os, "pwrite", _failing_on(path.stat().st_ino, after=1000))
    with pytest.raises(WriteError, match=r"^not written: No space left on device$"):
        write_fixed(path, FIXED, ORIGINAL)
    assert path.read_bytes() == ORIGINAL and twin.read_bytes() == ORIGINAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py", "twin.py"]


def test_a_rewrite_that_cannot_be_undone_says_so_and_keeps_the_old_text(tmp_path, monkeypatch):
    path, _ = _linked(tmp_path)
    monkeypatch.setattr(os, "pwrite", _failing_on(path.stat().st_ino, after=1000, always=True))
    with pytest.raises(WriteError, match=r"^written in part and not restored") as raised:
        write_fixed(path, FIXED, ORIGINAL)
    kept = Path(str(raised.value).rpartition("its old text is in ")[2])
    assert kept.parent == tmp_path and kept.read_bytes() == ORIGINAL


def test_the_new_text_is_whole_on_disk_before_the_file_is_touched(tmp_path, monkeypatch):
    """Whatever ends the process in the middle of the rewrite, the new text is complete beside
    the file at that moment."""
    path, _ = _linked(tmp_path)
    inode = path.stat().st_ino
    seen: list[bytes] = []
    real = os.pwrite

    def pwrite(descriptor: int, data, offset: int) -> int:
        if os.fstat(descriptor).st_ino == inode:
            seen.extend(p.read_bytes() for p in tmp_path.iterdir() if p.name.endswith(".new"))
        return real(descriptor, data, offset)
    monkeypatch.setattr(os, "pwrite", pwrite)
    write_fixed(path, FIXED, ORIGINAL)
    assert seen and set(seen) == {FIXED}
    assert path.read_bytes() == FIXED and (tmp_path / "twin.py").read_bytes() == FIXED
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py", "twin.py"]


def test_a_rename_needs_no_copy_beside(tmp_path):
    """The ordinary file is still replaced by a rename, not rewritten in place."""
    path = tmp_path / "train.py"
    path.write_bytes(ORIGINAL)
    inode = path.stat().st_ino
    write_fixed(path, FIXED, ORIGINAL)
    assert path.read_bytes() == FIXED and path.stat().st_ino != inode
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]

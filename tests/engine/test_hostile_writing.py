"""Hostile trees, write side: a file that may not or should not be replaced is one error line,
stays byte for byte (with its owner, mode and links), and the other files are still fixed.
What CI's file system cannot do (chattr +i, a read-only folder for root) is simulated by
making the system call fail as the kernel would."""

from __future__ import annotations

import errno
import os
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from cudalint.engine.fixes.writer import WriteError, write_fixed
from cudalint.engine.lint import autofix
from tests.engine.fixing_run import GOOD, assert_fixed, good_file, run

SOURCE = str(Path(__file__).parents[2] / "src")


def _refuse(monkeypatch: pytest.MonkeyPatch, module: object, name: str, path: Path,
            code: int) -> None:
    """Make `module.name(...)` fail with `code` when its first argument lies at `path`."""
    original = getattr(module, name)

    def refusing(first, *args, **kwargs):
        if Path(os.fsdecode(first)).name.startswith((path.name, f".{path.name}.")):
            raise OSError(code, os.strerror(code), str(first))
        return original(first, *args, **kwargs)

    monkeypatch.setattr(module, name, refusing)


def _tree(root: Path) -> tuple[Path, Path]:
    bad = root / "bad.py"
    bad.write_text(GOOD)
    return bad, good_file(root)


def test_a_read_only_file_is_reported_not_replaced(tmp_path, capsys):
    bad, good = _tree(tmp_path)
    bad.chmod(0o444)  # root could write it; the mode says nobody should
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.errors("bad.py") == ["not written: the file is read-only (mode 0444)"]
    assert outcome.codes("bad.py") == ["CUD102"]  # its findings, as it stays
    assert bad.read_text() == GOOD and stat.S_IMODE(bad.stat().st_mode) == 0o444
    assert_fixed(good)


def test_an_immutable_file_is_reported_not_replaced(tmp_path, capsys, monkeypatch):
    bad, good = _tree(tmp_path)
    inode = bad.stat().st_ino
    _refuse(monkeypatch, os, "replace", bad, errno.EPERM)  # chattr +i
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.errors("bad.py") == ["not written: Operation not permitted"]
    assert bad.read_text() == GOOD and bad.stat().st_ino == inode
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert_fixed(good)


def test_a_file_in_a_read_only_folder_is_reported_not_replaced(tmp_path, capsys, monkeypatch):
    bad, good = _tree(tmp_path)
    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        if kwargs.get("prefix", "").startswith(".bad.py."):
            raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path))
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.errors("bad.py") == ["not written: Permission denied"]
    assert bad.read_text() == GOOD
    assert_fixed(good)


def test_a_file_changed_while_it_was_checked_is_not_overwritten(tmp_path, capsys, monkeypatch):
    bad, good = _tree(tmp_path)
    edited = GOOD + "x = 1  # saved in an editor meanwhile\n"
    fix_python = autofix.fix_python

    def slow_fix(data, path, *args, **kwargs):
        outcome = fix_python(data, path, *args, **kwargs)
        if path.name == "bad.py":
            path.write_text(edited)
        return outcome

    monkeypatch.setattr(autofix, "fix_python", slow_fix)  # the runner imports it when it fixes
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.errors("bad.py") == ["not written: the file changed since it was read"]
    assert bad.read_text() == edited
    assert_fixed(good)


def test_hard_links_keep_sharing_the_fixed_text(tmp_path, capsys):
    bad, good = _tree(tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    twin = other / "twin.txt"
    os.link(bad, twin)
    inode = bad.stat().st_ino
    outcome = run(capsys, "check", "--fix", str(bad), str(good))
    assert outcome.code == 0
    assert bad.stat().st_ino == inode and bad.stat().st_nlink == 2
    assert_fixed(bad)
    assert twin.read_text() == bad.read_text()
    assert_fixed(good)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_owner_group_and_mode_are_kept(tmp_path, capsys):
    bad, _ = _tree(tmp_path)
    os.chown(bad, 1234, 4321)
    bad.chmod(0o640)
    run(capsys, "check", "--fix", str(tmp_path))
    info = bad.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (1234, 4321, 0o640)
    assert_fixed(bad)


def test_nothing_is_written_through_a_link(tmp_path):
    real = tmp_path / "real.py"
    real.write_text(GOOD)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    with pytest.raises(WriteError, match="a symbolic link"):
        write_fixed(link, b"changed\n", GOOD.encode())
    assert real.read_text() == GOOD and link.is_symlink()


def test_an_in_place_write_checks_the_text_it_replaces(tmp_path):
    path = tmp_path / "shared.py"
    path.write_text("current\n")
    os.link(path, tmp_path / "twin.py")  # two links: written in place
    with pytest.raises(WriteError, match="changed since it was read"):
        write_fixed(path, b"fixed\n", b"what was read\n")
    assert path.read_text() == "current\n"
    write_fixed(path, b"fixed\n", b"current\n")
    assert (tmp_path / "twin.py").read_text() == "fixed\n"


# A POSIX ACL as the kernel stores it: version 2, then (tag, permissions, id) entries sorted by
# tag: the owner rw, user 1234 rw, the group r, the mask rw, others r.
_ACL = b"".join([struct.pack("<I", 2), *(struct.pack("<HHI", tag, perm, uid) for tag, perm, uid in
                 [(0x01, 6, 0xFFFFFFFF), (0x02, 6, 1234), (0x04, 4, 0xFFFFFFFF),
                  (0x10, 6, 0xFFFFFFFF), (0x20, 4, 0xFFFFFFFF)])])


def _set_attribute_or_skip(path: Path, name: str, value: bytes) -> None:
    if not hasattr(os, "setxattr"):
        pytest.skip("no extended attributes on this system")
    try:
        os.setxattr(path, name, value)
    except OSError as error:
        pytest.skip(f"{name} not supported here: {error.strerror}")


@pytest.mark.parametrize(("name", "value"), [
    ("user.origin", b"downloaded from the cluster"),
    ("system.posix_acl_access", _ACL),  # what setfacl -m u:1234:rw writes
])
def test_extended_attributes_and_acls_are_kept(tmp_path, capsys, name, value):
    bad, good = _tree(tmp_path)
    _set_attribute_or_skip(bad, name, value)
    inode = bad.stat().st_ino
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.code == 0 and outcome.errors("bad.py") == []
    assert_fixed(bad)
    assert bad.stat().st_ino != inode  # replaced through a rename, the attribute copied
    assert os.getxattr(bad, name) == value
    assert_fixed(good)


def test_an_acl_inherited_from_the_folder_is_not_added(tmp_path, capsys):
    """The temporary file takes the folder's default ACL; the file it replaces had none."""
    bad, good = _tree(tmp_path)
    _set_attribute_or_skip(tmp_path, "system.posix_acl_default", _ACL)
    run(capsys, "check", "--fix", str(tmp_path))
    assert_fixed(bad)
    assert "system.posix_acl_access" not in os.listxattr(bad)
    assert "system.posix_acl_access" in os.listxattr(tmp_path / "_device.py")  # created here
    assert_fixed(good)


def test_an_attribute_the_new_file_cannot_take_means_writing_in_place(tmp_path, capsys,
                                                                      monkeypatch):
    """An unprivileged user may not set security.* labels: the file is rewritten in place."""
    bad, good = _tree(tmp_path)
    _set_attribute_or_skip(bad, "user.label", b"kept")
    inode = bad.stat().st_ino
    monkeypatch.setattr(os, "setxattr", _refusing_descriptors(os.setxattr))
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.code == 0 and outcome.errors("bad.py") == []
    assert_fixed(bad)
    assert bad.stat().st_ino == inode and os.getxattr(bad, "user.label") == b"kept"
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert_fixed(good)


def _refusing_descriptors(setxattr):
    """os.setxattr failing on a file descriptor (the temporary file) as for a label."""
    def refusing(target, *args, **kwargs):
        if isinstance(target, int):
            raise OSError(errno.EPERM, os.strerror(errno.EPERM))
        return setxattr(target, *args, **kwargs)
    return refusing


def test_sigterm_during_a_write_lets_it_finish(tmp_path):
    """A worker gets SIGTERM when cudalint dies: the file in hand is written whole, no
    temporary file is left, and then the process ends as SIGTERM says."""
    path = tmp_path / "train.py"
    path.write_text(GOOD)
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from cudalint.engine.fixes import writer

        replace = os.replace
        def replace_after_sigterm(source, target):
            os.kill(os.getpid(), signal.SIGTERM)  # after the temporary file, before the rename
            replace(source, target)
        os.replace = replace_after_sigterm
        writer.write_fixed(Path({str(path)!r}), b"fixed\\n", {GOOD.encode()!r})
        print("not reached")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": SOURCE})
    assert done.returncode == -signal.SIGTERM, done.stderr
    assert "not reached" not in done.stdout
    assert path.read_text() == "fixed\n"
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]

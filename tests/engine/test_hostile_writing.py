"""Hostile trees, write side: a file that may not or should not be replaced is one error line,
stays byte for byte (with its owner, mode and links), and the other files are still fixed.
What CI's file system cannot do (chattr +i, a read-only folder for root) is simulated by
making the system call fail as the kernel would."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from cudalint import writing as writer
from cudalint.engine.lint import autofix
from cudalint.writing import WriteError, write_fixed
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


# What a user without root privileges runs: a child that drops them when the tests run as root
# (after importing all it needs: the interpreter may lie in root's home), or runs as it is.
_UNPRIVILEGED = textwrap.dedent("""
    import contextlib, io, os, sys
    from cudalint.cli import main
    def check(folder):
        return main(["check", "--fix", "--no-cache", "--output-format", "json", folder])
    with contextlib.redirect_stdout(io.StringIO()):
        check(sys.argv[1])  # the same run once, so that every module it imports is loaded
    if os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)
    assert os.geteuid() != 0 and not os.access("/root", os.W_OK)
    sys.exit(check(sys.argv[2]))
""")


def _user_tree(top: Path, name: str) -> tuple[Path, Path]:
    """A project the unprivileged user owns: a read-only bad.py and a good.py."""
    root = top / name
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "t"\n')
    bad, good = _tree(root)
    bad.chmod(0o444)
    return bad, good


def test_a_read_only_file_is_not_replaced_for_a_user_without_root():
    """A rename replaces a read-only file as easily as a writable one (only the folder's
    permission counts): the refusal is cudalint's own, for root and for everyone else."""
    top = Path(tempfile.mkdtemp(prefix="cudalint-user-"))  # root's tmp_path is root's alone
    try:
        _user_tree(top, "warm")  # for the run that loads every module first
        bad, good = _user_tree(top, "project")
        if os.geteuid() == 0:
            for path in [top, *top.rglob("*")]:
                os.lchown(path, 65534, 65534)
        top.chmod(0o755)
        done = subprocess.run(
            [sys.executable, "-c", _UNPRIVILEGED, str(top / "warm"), str(top / "project")],
            capture_output=True, text=True, timeout=120, cwd=top,
            env={**os.environ, "PYTHONPATH": SOURCE, "PYTHONDONTWRITEBYTECODE": "1"})
        found = json.loads(done.stdout)
        errors = [f["message"] for f in found if f["code"] is None]
        assert errors == ["not written: the file is read-only (mode 0444)"], done.stderr
        assert done.returncode == 2  # a file that could not be written
        assert sorted(str(f["code"]) for f in found if f["filename"].endswith("bad.py")) == [
            "CUD102", "None"]  # its finding, and the error line
        assert bad.read_text() == GOOD and stat.S_IMODE(bad.stat().st_mode) == 0o444
        assert_fixed(good)
    finally:
        shutil.rmtree(top)


@pytest.mark.parametrize(("mode", "writable"), [
    pytest.param(0o444, True, id="no-write-bit-though-access-allows-it-as-for-root"),
    pytest.param(0o644, False, id="write-bit-but-not-for-this-user"),
])
def test_the_read_only_check_itself(tmp_path, monkeypatch, mode, writable):
    """Both halves of the check, whoever runs the tests: the mode, which root's access()
    ignores, and access(), for a file another user owns."""
    path = tmp_path / "train.py"
    path.write_text(GOOD)
    path.chmod(mode)
    monkeypatch.setattr(os, "access", lambda *_args, **_kwargs: writable)
    with pytest.raises(WriteError, match=re.escape(f"read-only (mode {mode:04o})")):
        write_fixed(path, b"changed\n", GOOD.encode())
    assert path.read_text() == GOOD and stat.S_IMODE(path.stat().st_mode) == mode


def test_an_immutable_file_is_reported_not_replaced(tmp_path, capsys, monkeypatch):
    bad, good = _tree(tmp_path)
    inode = bad.stat().st_ino
    _refuse(monkeypatch, os, "replace", bad, errno.EPERM)  # chattr +i
    _refuse(monkeypatch, writer, "_exchange", bad, errno.EPERM)  # (a rename, on Linux)
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


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "no-exchange"])
def test_a_save_between_the_first_check_and_the_lock_is_not_overwritten(tmp_path, monkeypatch,
                                                                        exchange):
    """The text is compared again under the file's lock: an editor's save written into the
    file just after the first comparison is kept and the fix refused, where the file system
    can exchange two names (renameat2) and where it cannot (a plain rename)."""
    path = tmp_path / "train.py"
    path.write_text(GOOD)
    saved = GOOD + "x = 1  # saved in an editor\n"
    read_current = writer._read_current

    def then_saved(*args):
        current = read_current(*args)
        with open(path, "r+") as handle:  # in place: the file the fix read, not a new one
            handle.write(saved)
        return current

    monkeypatch.setattr(writer, "_read_current", then_saved)
    if not exchange:
        monkeypatch.setattr(writer, "_exchange", lambda first, second: False)
    with pytest.raises(WriteError, match=r"^not written: the file changed since it was read$"):
        write_fixed(path, b"fixed = True\n", GOOD.encode())
    assert path.read_text() == saved
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]


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


def test_a_file_that_became_a_link_while_checked_is_not_written_through(tmp_path, capsys,
                                                                        monkeypatch):
    """Swapped for a link between the read and the write: the link stays a link, the file it
    points to stays as it was, the file's finding is still reported, and the run fails."""
    bad, good = _tree(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "target.py"
    target.write_text(GOOD)
    fix_python = autofix.fix_python

    def swapping_fix(data, path, *args, **kwargs):
        outcome = fix_python(data, path, *args, **kwargs)
        if path.name == "bad.py":
            path.unlink()
            path.symlink_to(target)
        return outcome

    monkeypatch.setattr(autofix, "fix_python", swapping_fix)
    outcome = run(capsys, "check", "--fix", "--no-cache", str(bad), str(good))
    assert outcome.code == 2  # a file that could not be written
    assert outcome.errors("bad.py") == ["not written: a symbolic link (fix the file it points to)"]
    assert outcome.codes("bad.py") == ["CUD102"]
    assert bad.is_symlink() and os.readlink(bad) == str(target)
    assert target.read_text() == GOOD
    assert [p.name for p in elsewhere.iterdir()] == ["target.py"]
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert_fixed(good)


def test_a_link_to_a_file_outside_the_project_is_skipped_not_followed(tmp_path, capsys):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "t"\n')
    outside = tmp_path / "outside.py"
    outside.write_text(GOOD)
    link = project / "link.py"
    link.symlink_to(outside)
    good = good_file(project)
    outcome = run(capsys, "check", "--fix", "--no-cache", str(link), str(good))
    assert outcome.code == 1
    assert outcome.errors("link.py") == [
        "a symbolic link to a file outside the project; skipped"]
    assert link.is_symlink() and outside.read_text() == GOOD
    assert_fixed(good)


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
        from cudalint import writing as writer

        replace, exchange = os.replace, writer._exchange
        def replace_after_sigterm(source, target):
            os.kill(os.getpid(), signal.SIGTERM)  # after the temporary file, before the rename
            replace(source, target)
        def exchange_after_sigterm(first, second):  # the rename, where Linux exchanges
            os.kill(os.getpid(), signal.SIGTERM)
            return exchange(first, second)
        os.replace, writer._exchange = replace_after_sigterm, exchange_after_sigterm
        writer.write_fixed(Path({str(path)!r}), b"fixed\\n", {GOOD.encode()!r})
        print("not reached")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": SOURCE})
    assert done.returncode == -signal.SIGTERM, done.stderr
    assert "not reached" not in done.stdout
    assert path.read_text() == "fixed\n"
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]

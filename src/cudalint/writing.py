"""Every file cudalint writes goes through here: a fixed file (`write_fixed`), the device
helper, and the files a command is told to write (`write_file`: `init-helper`, `smoke --init`,
a report's `-o`). Bytes in, bytes out, so the encoding, a BOM and the line endings are whatever
the caller kept.

A file is replaced through a temporary file in its folder and a rename, so an interrupted write
never leaves half a file, with its mode, owner, group and extended attributes kept (user.*, and
the POSIX ACLs and SELinux label, which are extended attributes too). Where a rename cannot keep
what the file is (a hard link, an owner cudalint cannot give back, an attribute it may not set),
it is rewritten in place instead, and only once the new text is whole on disk beside it (a full
disk or `ulimit -f` stops that copy, and the file is untouched); should the rewrite fail all the
same, the file's old bytes are written back. "not written" means nothing was.
Nothing is written through a symbolic link, into a file its mode makes read-only or into a
folder whose mode has no write bit (even for root, whom access() lets write anything), or over a
file that changed since it was read: each is a WriteError, and the file stays.

An editor's save may land while the file is replaced. The comparison with what was read and the
rename happen under an advisory lock on the file (`flock`: a writer that takes it too, another
cudalint included, waits), and on Linux the rename is an exchange (renameat2 RENAME_EXCHANGE):
what it took off the path is checked once more, its identity and its content, and put back if a
save landed meanwhile ("changed during the fix"), so that no save is ever lost.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class WriteError(Exception):
    """Why a fixed file was not written, on one line."""


class _CannotKeep(Exception):
    """A new file would lose something of the old one: write in place instead."""


def write_fixed(path: Path, data: bytes, original: bytes) -> None:
    """Replace the contents of `path`, read as `original`, with `data`."""
    try:
        info = os.lstat(path)
        _require_writable(path, info)
        with _signals_deferred():
            try:
                _replace(path, data, original, info)
            except _CannotKeep:
                _rewrite_in_place(path, data, original, info)
    except OSError as error:
        raise WriteError(f"not written: {error.strerror or type(error).__name__}") from error


# The most a file that a command is told to overwrite may hold (it is read to be compared).
MAX_REPLACED_SIZE = 1 << 30


def write_file(path: Path, data: bytes, *, overwrite: bool) -> None:
    """Write `data` to `path`, a file a command was told to write (`init-helper`, `smoke
    --init`, a report's `-o`), creating it, or replacing it where `overwrite` (else a
    WriteError "exists"); its missing folders are made. No symbolic link is followed: not at
    its name (dangling or not), nor among its folders below the current folder (a link a
    cloned repository holds). A WriteError (one line) where it is not written."""
    from cudalint.files import ReadError, read_regular

    path = Path(os.path.abspath(path))
    try:
        _require_no_link_below(Path.cwd(), path.parent)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            _make_folders(path.parent)
            require_writable_folder(path.parent)
            with _signals_deferred():
                create_file(path, data)
            return
        if stat.S_ISLNK(info.st_mode):
            raise WriteError("not written: a symbolic link is at its name (name the file it "
                             "points to)")
        _require_writable(path, info)
        if not overwrite:
            raise WriteError("not written: it exists")
        try:
            current = read_regular(path, MAX_REPLACED_SIZE)
        except ReadError as error:
            raise WriteError(f"not written: {error}") from None
    except FileExistsError:
        raise WriteError("not written: something was made at its name meanwhile") from None
    except OSError as error:
        raise WriteError(f"not written: {error.strerror or type(error).__name__}") from error
    write_fixed(path, data, current)


def _require_no_link_below(top: Path, folder: Path) -> None:
    """A WriteError where a folder of `folder`'s path below `top` is a symbolic link."""
    try:
        parts = folder.relative_to(top).parts
    except ValueError:
        return  # a folder the user named outside the current one: theirs to name
    at = top
    for part in parts:
        at = at / part
        try:
            if stat.S_ISLNK(os.lstat(at).st_mode):
                raise WriteError(f"not written: {at} is a symbolic link (name the folder it "
                                 "points to)")
        except FileNotFoundError:
            return


def _make_folders(folder: Path) -> None:
    missing = []
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    for each in reversed(missing):
        os.mkdir(each)
        if stat.S_ISLNK(os.lstat(each).st_mode):  # pragma: no cover - a race
            raise WriteError(f"not written: {each} is a symbolic link")


def create_file(path: Path, data: bytes) -> None:
    """A new file at `path`, whole or not at all, never through a link or over anything there
    (FileExistsError), with the mode the umask gives."""
    descriptor, temporary = tempfile.mkstemp(prefix=".cudalint-", dir=path.parent)
    try:
        _overwrite(descriptor, data)
        os.fchmod(descriptor, 0o666 & ~_umask())
        os.link(temporary, path)  # fails where anything, a dangling link included, is there
    finally:
        os.close(descriptor)
        os.unlink(temporary)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _require_writable(path: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise WriteError("not written: a symbolic link (fix the file it points to)")
    if not stat.S_ISREG(info.st_mode):
        raise WriteError("not written: not a regular file")
    locked = _locked_by_flags(path, info)
    if locked:
        raise WriteError(f"not written: the file is {locked}")
    mode = stat.S_IMODE(info.st_mode)
    # Root may write anything; a file nobody may write is still left alone.
    if not mode & 0o222 or not os.access(path, os.W_OK):
        raise WriteError(f"not written: the file is read-only (mode {mode:04o})")
    require_writable_folder(path.parent)


def require_writable_folder(folder: Path) -> None:
    """A folder whose mode gives nobody the write bit is read-only, even for root; one marked
    immutable or append-only takes no new file, nor a rename."""
    info = os.stat(folder)
    locked = _locked_by_flags(folder, info)
    if locked:
        raise WriteError(f"not written: its folder is {locked}")
    mode = stat.S_IMODE(info.st_mode)
    if not mode & 0o222:
        raise WriteError(f"not written: its folder is read-only (mode {mode:04o})")


# The inode flags that refuse a rewrite whatever the mode says, root included (chattr +i / +a
# on Linux, chflags uchg / uappnd on the BSDs and macOS).
_FS_IOC_GETFLAGS = 0x80086601  # <linux/fs.h>, _IOR('f', 1, long)
_FS_IMMUTABLE_FL, _FS_APPEND_FL = 0x10, 0x20
_IMMUTABLE = "immutable (chattr +i, chflags uchg)"
_APPEND_ONLY = "append-only (chattr +a, chflags uappnd)"


def _locked_by_flags(path: Path, info: os.stat_result) -> str | None:
    """Why the file or folder's own flags refuse a rewrite (immutable, append-only), or None."""
    bsd = getattr(info, "st_flags", 0)
    if bsd:
        if bsd & (stat.UF_IMMUTABLE | stat.SF_IMMUTABLE):
            return _IMMUTABLE
        return _APPEND_ONLY if bsd & (stat.UF_APPEND | stat.SF_APPEND) else None
    flags = inode_flags(path)
    if flags & _FS_IMMUTABLE_FL:
        return _IMMUTABLE
    return _APPEND_ONLY if flags & _FS_APPEND_FL else None


def inode_flags(path: Path) -> int:
    """The Linux inode flags of `path` (FS_IOC_GETFLAGS); 0 where the platform or the file
    system keeps none."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return 0
    try:
        answer = fcntl.ioctl(descriptor, _FS_IOC_GETFLAGS, bytes(8))
    except OSError:  # ENOTTY: a file system without flags
        return 0
    finally:
        os.close(descriptor)
    return int.from_bytes(answer[:4], sys.byteorder)  # the kernel writes an int


def _replaceable(info: os.stat_result) -> bool:
    """A rename keeps the file's identity: no other hard link, and an owner we can give back."""
    ours = (info.st_uid, info.st_gid) == (os.geteuid(), os.getegid())
    return info.st_nlink == 1 and (ours or os.geteuid() == 0)


def _replace(path: Path, data: bytes, original: bytes, info: os.stat_result) -> None:
    if not _replaceable(info):
        raise _CannotKeep
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            if (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
                os.fchown(file.fileno(), info.st_uid, info.st_gid)
            os.fchmod(file.fileno(), stat.S_IMODE(info.st_mode))  # after chown clears set-id
            _copy_attributes(path, file.fileno())  # after chown drops security.capability
            os.fsync(file.fileno())
        _require_unchanged(_read_current(path, info, len(original)), original)
        _swap_in(path, temporary, original, info)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _swap_in(path: Path, temporary: str, original: bytes, info: os.stat_result) -> None:
    """Put `temporary` at `path` if `path` still holds the file read as `original`: compared
    under the file's lock (and the new file's, so that a writer that locks never writes into
    a file that is then taken back), then exchanged, and what the exchange took off the path
    compared once more; put back where a save landed between the two."""
    with _locked(path, info) as old, _locked(Path(temporary)) as new:
        _require_unchanged(_read_from(old, len(original)), original)
        if not _exchange(temporary, path):
            os.replace(temporary, path)  # no exchange here: the lock is all there is
            return
        taken = os.lstat(temporary)
        if ((taken.st_dev, taken.st_ino) == (info.st_dev, info.st_ino)
                and _read_from(old, len(original)) == original):
            os.unlink(temporary)  # the file as it was read
            return
        here = os.lstat(path)
        ours = os.fstat(new)
        if (here.st_dev, here.st_ino) == (ours.st_dev, ours.st_ino):
            _exchange(temporary, path)  # the save back in its place; ours is then unlinked
        raise WriteError("not written: the file changed during the fix")


@contextlib.contextmanager
def _locked(path: Path, info: os.stat_result | None = None) -> Iterator[int]:
    """`path` open and under an exclusive advisory lock (the same file as `info`, if given)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        if info is not None:
            _require_same_file(os.fstat(descriptor), info)
        yield descriptor
    finally:
        os.close(descriptor)


def _read_from(descriptor: int, size: int) -> bytes:
    """Up to `size` + 1 bytes from the start of the open file."""
    chunks: list[bytes] = []
    offset, left = 0, size + 1
    while left > 0:
        chunk = os.pread(descriptor, left, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        left -= len(chunk)
    return b"".join(chunks)


_RENAME_EXCHANGE = 2  # <linux/fs.h>
_AT_FDCWD = -100
_renameat2: list[object] = []  # the C function, once looked up (None: not on this system)


def _exchange(first: str | Path, second: str | Path) -> bool:
    """Swap two names atomically (Linux 3.15+, glibc 2.28+); False where that cannot be done
    (another system, a file system without it), and nothing changed."""
    if not _renameat2:
        _renameat2.append(_lookup_renameat2())
    function = _renameat2[0]
    if function is None:
        return False
    result = function(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second),  # type: ignore[operator]
                      _RENAME_EXCHANGE)
    if result == 0:
        return True
    import ctypes

    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(second))


def _lookup_renameat2() -> object:
    import sys

    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                         ctypes.c_uint)
    function.restype = ctypes.c_int
    return function


def _copy_attributes(path: Path, descriptor: int) -> None:
    """Give the new file exactly the extended attributes of the old; _CannotKeep where one
    cannot be read, set or removed (a label or capability only a privileged user may set)."""
    if not hasattr(os, "listxattr"):  # Linux only
        return
    try:
        wanted = {name: os.getxattr(path, name, follow_symlinks=False)
                  for name in _attribute_names(path)}
        for name in _attribute_names(descriptor):  # a folder's default ACL, inherited
            if name not in wanted:
                os.removexattr(descriptor, name)
        for name, value in wanted.items():
            if _attribute(descriptor, name) != value:
                os.setxattr(descriptor, name, value)
    except OSError as error:
        raise _CannotKeep from error


def _attribute_names(target: Path | int) -> list[str]:
    try:
        if isinstance(target, int):
            return os.listxattr(target)
        return os.listxattr(target, follow_symlinks=False)
    except OSError as error:
        if error.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):  # a file system without them
            return []
        raise


def _attribute(descriptor: int, name: str) -> bytes | None:
    try:
        return os.getxattr(descriptor, name)
    except OSError:
        return None


def _rewrite_in_place(path: Path, data: bytes, original: bytes, info: os.stat_result) -> None:
    """Rewrite the file itself (its inode: hard links, owner and attributes stay), once `data`
    is whole on disk beside it; its `original` bytes written back should the rewrite fail."""
    descriptor = os.open(path, os.O_RDWR | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # released with the descriptor
        _require_same_file(os.fstat(descriptor), info)
        _require_unchanged(_read_up_to(descriptor, len(original) + 1), original)
        with _written_beside(path, data):  # no room for it: nothing is touched
            try:
                _overwrite(descriptor, data)
            except BaseException:
                _restore(path, descriptor, original)
                raise
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def _written_beside(path: Path, data: bytes) -> Iterator[None]:
    """`data` in a private file in `path`'s folder, synced, for as long as the rewrite lasts:
    the text is whole on disk before the old one is touched (and stays there if the process
    dies in the middle)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".new")
    try:
        _overwrite(handle, data)
        yield
    finally:
        os.close(handle)
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _overwrite(descriptor: int, data: bytes) -> None:
    """The open file's bytes made `data`, synced."""
    view, offset = memoryview(data), 0
    while offset < len(data):
        offset += os.pwrite(descriptor, view[offset:], offset)
    os.ftruncate(descriptor, len(data))
    os.fsync(descriptor)


def _restore(path: Path, descriptor: int, original: bytes) -> None:
    """Write the file's old bytes back after a failed rewrite; where even that fails, keep them
    beside it and say where (a WriteError)."""
    try:
        _overwrite(descriptor, original)
    except OSError as error:
        kept = _keep_beside(path, original)
        where = f"its old text is in {kept}" if kept else "its old text could not be kept"
        raise WriteError(f"written in part and not restored ({error.strerror}): {where}") \
            from error


def _keep_beside(path: Path, data: bytes) -> str | None:
    try:
        handle, kept = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.", suffix=".orig")
    except OSError:
        return None
    try:
        _overwrite(handle, data)
    except OSError:
        return None
    finally:
        os.close(handle)
    return kept


def _read_current(path: Path, info: os.stat_result, size: int) -> bytes:
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC)
    try:
        _require_same_file(os.fstat(descriptor), info)
        return _read_up_to(descriptor, size + 1)
    finally:
        os.close(descriptor)


def _read_up_to(descriptor: int, size: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0:
        chunk = os.read(descriptor, size)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _require_same_file(now: os.stat_result, before: os.stat_result) -> None:
    if (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
        raise WriteError("not written: the file was replaced while it was checked")


def _require_unchanged(current: bytes, original: bytes) -> None:
    if current != original:
        raise WriteError("not written: the file changed since it was read")


_DEFERRED = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Let a write finish before Ctrl-C or SIGTERM (which a worker gets when cudalint dies)
    takes effect, so that no temporary file is left behind (only the main thread has
    signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {number: signal.signal(number, lambda got, _frame: received.append(got))
                for number in _DEFERRED}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    for got in dict.fromkeys(received):
        handler = previous[signal.Signals(got)]
        if callable(handler):
            handler(got, None)
        elif handler == signal.SIG_DFL:
            os.kill(os.getpid(), got)  # its default action, now that the write is done


signals_deferred = _signals_deferred  # for the other writes of a fix (engine.fixes.helper_file)

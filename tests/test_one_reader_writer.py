"""Every file cudalint reads goes through the one reader (cudalint.files: regular files only,
size-limited, never blocking) and every file it writes through the one writer
(cudalint.writing: no link followed, whole or not at all): a plain open(), read_text() or
write_text() in src/ is one of the few listed here, each with its reason. A new one fails
this test until it is routed, or listed with a reason; a listed one that is gone fails it
too, so the list stays true."""

from __future__ import annotations

import re
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "cudalint"
PLAIN = re.compile(r"(?<![\w.])open\(|\.open\(|\.(?:read|write)_(?:text|bytes)\(")
SHARED = ("files.py", "writing.py")  # the reader and the writer themselves

ALLOWED = {
    ("runtime/helper.py", "HELPER_PATH.read_text("): "cudalint's own device.py",
    ("data/__init__.py", "path.read_text("): "cudalint's own data tables",
    ("data/__init__.py", "_copy_of(name).read_bytes("): "their parsed copies in __pycache__",
    ("data/__init__.py", "temporary.write_bytes("): "a parsed copy, renamed into __pycache__",
    ("rules/index_build.py", "path().write_text("): "a developer's regeneration of the index",
    ("docs.py", "(folder / name).write_text("): "a developer's regeneration of the docs",
    ("engine/running/pool.py", 'open("/proc/self/statm"'): "the kernel's view of a worker",
    ("runtime/smoke/signals.py", 'open(f"/proc/{pid}/environ"'): "the kernel's",
    ("runtime/smoke/isolation.py", "path.read_text("): "a worker's result, in smoke's own "
                                                      "private temporary folder",
    ("runtime/smoke/command.py", "Path(args.worker_json).write_text("): "the same, written",
    ("runtime/smoke/kill.py", "note.read_text("): "smoke's own private temporary folder",
    ("runtime/smoke/kill.py", "out.read_text("): "smoke's own private temporary folder",
    ("runtime/smoke/kill.py", "note.write_text("): "smoke's own private temporary folder",
    ("runtime/smoke/kill.py", "out.write_text("): "smoke's own private temporary folder",
    ("runtime/smoke/reference.py", 'path.open("rb")'): "a saved reference (issue 44's smoke "
                                                       "items: validated before it is read)",
    ("engine/running/cache.py", "os.open(temporary"): "the cache's own entries (temporary "
                                                     "file and rename, no fsync: a replayed "
                                                     "run imports no writer)",
    ("engine/fixes/helper_file.py", "os.open(folder"): "a folder opened to lock it",
    ("commands/check.py", "os.open(os.devnull"): "/dev/null",
    ("commands/mps_ops.py", "os.open(os.devnull"): "/dev/null",
}


def _plain_calls() -> set[tuple[str, str]]:
    found = set()
    for path in SOURCE.rglob("*.py"):
        relative = path.relative_to(SOURCE).as_posix()
        if relative in SHARED:
            continue
        for line in path.read_text().splitlines():
            code = line.split("#")[0]
            if not PLAIN.search(code) or "def open(" in code or "Cache.open(" in code:
                continue
            found.add((relative, next((snippet for file, snippet in ALLOWED
                                       if file == relative and snippet in code), code.strip())))
    return found


def test_every_read_and_write_goes_through_the_shared_reader_and_writer():
    found = _plain_calls()
    assert sorted(found - set(ALLOWED)) == [], "route these through cudalint.files/writing"
    assert sorted(set(ALLOWED) - found) == [], "no longer there: take them off the list"

"""A file or folder whose inode flags refuse a rewrite (chattr +i / +a on Linux, chflags
uchg / uappnd elsewhere) is reported as such, not as "read-only (mode 0644)" (issue 31, item
17): one error line, exit 2, the file as it was, and the rest of the tree fixed.

Where `chattr` cannot set the flag (not root, a file system without flags), the flag is
emulated by patching the writer's look at the inode flags."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cudalint import writing as writer
from cudalint.writing import WriteError, write_fixed
from tests.engine.fixing_run import GOOD, assert_fixed, good_file, run

FLAGS = {"+i": (0x10, "immutable (chattr +i, chflags uchg)"),
         "+a": (0x20, "append-only (chattr +a, chflags uappnd)")}


def _chattr(flag: str, path: Path) -> bool:
    if shutil.which("chattr") is None:
        return False
    done = subprocess.run(["chattr", flag, str(path)], capture_output=True, check=False)
    return done.returncode == 0


@pytest.fixture(params=["chattr", "emulated"])
def set_flag(request, monkeypatch) -> Iterator[Callable[[str, Path], None]]:
    """Sets a flag on a path: with chattr (skipped where it cannot), or emulated."""
    flagged: dict[Path, int] = {}
    real: list[tuple[str, Path]] = []

    def emulated(path: Path) -> int:
        return flagged.get(Path(path), 0)

    if request.param == "emulated":
        monkeypatch.setattr(writer, "inode_flags", emulated)

    def set_flag(flag: str, path: Path) -> None:
        if request.param == "emulated":
            flagged[path] = FLAGS[flag][0]
        elif _chattr(flag, path):
            real.append((flag, path))
        else:
            pytest.skip("chattr cannot set the flag here (not root, or no such file system)")

    yield set_flag
    for flag, path in real:
        _chattr(flag.replace("+", "-"), path)


@pytest.mark.parametrize("flag", list(FLAGS))
def test_a_flagged_file_is_refused_for_its_flag(tmp_path: Path, set_flag, flag: str) -> None:
    path = tmp_path / "m.py"
    path.write_text(GOOD)
    set_flag(flag, path)
    with pytest.raises(WriteError) as refused:
        write_fixed(path, b"fixed\n", GOOD.encode())
    assert str(refused.value) == f"not written: the file is {FLAGS[flag][1]}"
    assert path.read_text() == GOOD
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]  # no temporary file either


def test_a_run_reports_an_immutable_file_and_an_immutable_folder_and_fixes_the_rest(
        tmp_path: Path, capsys, set_flag) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    frozen = tmp_path / "frozen.py"
    frozen.write_text(GOOD)
    folder = tmp_path / "kept"
    folder.mkdir()
    inside = folder / "inside.py"
    inside.write_text(GOOD)
    good = good_file(tmp_path)
    set_flag("+i", frozen)
    set_flag("+i", folder)
    outcome = run(capsys, "check", "--fix", "--no-cache", str(tmp_path))
    assert outcome.errors("frozen.py") == [f"not written: the file is {FLAGS['+i'][1]}"]
    assert outcome.errors("inside.py") == [f"not written: its folder is {FLAGS['+i'][1]}"]
    assert frozen.read_text() == GOOD and inside.read_text() == GOOD
    assert_fixed(good)
    assert outcome.code == 2

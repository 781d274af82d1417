"""Hostile trees and runs, write side, round two: the device helper is never written through a
link or outside the project, and always before the first file that imports it (whatever ends
the run); a read-only folder is refused even for root; a fixed file that would not compile, or
would import its helper where the name ends up unbound, is never written."""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudalint import writing as writer
from cudalint.engine.checkers.job import imported_helpers
from cudalint.writing import WriteError, write_fixed
from tests.engine.fixing_run import GOOD, assert_fixed, good_file, run

SOURCE = str(Path(__file__).parents[2] / "src")


def _project(root: Path) -> Path:
    """A project root (a .git folder): root files import the helper at `_device.py`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    return root


def _helper_missing(root: Path) -> list[str]:
    """The files of `root` that import `_device` names it does not define (or that import it
    where there is none)."""
    helper = root / "_device.py"
    defined = _defined(helper)
    wrong = []
    for path in sorted(root.glob("*.py")):
        if path.name == "_device.py":
            continue
        names = imported_helpers(path.read_text(), "_device")
        if names and not names <= defined:
            wrong.append(path.name)
    return wrong


def _defined(helper: Path) -> frozenset[str]:
    from cudalint.runtime.helper import module_names

    try:
        return module_names(helper.read_text())
    except OSError:
        return frozenset()


# --- item 3: the helper through a link ------------------------------------------------------


def test_the_helper_is_not_written_through_a_dangling_link(tmp_path, capsys):
    root = _project(tmp_path / "proj")
    (tmp_path / "outside").mkdir()
    (root / "_device.py").symlink_to("../outside/x.py")
    bad = good_file(root, "a.py")
    outcome = run(capsys, "check", "--fix", "--no-cache", str(root))
    assert not (tmp_path / "outside" / "x.py").exists()
    assert os.readlink(root / "_device.py") == "../outside/x.py"
    [error] = outcome.errors("a.py")
    assert str(root / "_device.py") in error and "symbolic link" in error
    assert bad.read_text() == GOOD  # it would import a helper that is not there
    assert outcome.code == 2


def test_the_helper_is_not_extended_through_a_link_to_a_helper_elsewhere(tmp_path, capsys):
    from cudalint.runtime.helper import helper_module_text

    root = _project(tmp_path / "proj")
    (tmp_path / "outside").mkdir()
    elsewhere = tmp_path / "outside" / "x.py"
    elsewhere.write_text(helper_module_text(["pick_device"]))
    before = elsewhere.read_bytes()
    (root / "_device.py").symlink_to(elsewhere)
    (root / "a.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    outcome = run(capsys, "check", "--fix", "--no-cache", str(root))
    assert elsewhere.read_bytes() == before
    assert (root / "a.py").read_text() == "import torch\ntorch.cuda.synchronize()\n"
    [error] = outcome.errors("a.py")
    assert str(root / "_device.py") in error and "symbolic link" in error


# --- item 5: a read-only folder, as root ----------------------------------------------------


@pytest.fixture
def read_only_folder(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    yield folder
    folder.chmod(0o755)


def test_a_file_in_a_read_only_folder_is_refused_even_for_root(read_only_folder):
    path = read_only_folder / "m.py"
    path.write_text(GOOD)
    read_only_folder.chmod(0o555)
    with pytest.raises(WriteError, match=r"^not written: its folder is read-only \(mode 0555\)$"):
        write_fixed(path, b"fixed\n", GOOD.encode())
    assert path.read_text() == GOOD
    assert os.listdir(read_only_folder) == ["m.py"]  # no temporary file either


def test_a_run_reports_a_read_only_folder_and_fixes_the_rest(tmp_path, read_only_folder, capsys):
    _project(tmp_path)
    bad = read_only_folder / "bad.py"  # a script in a subfolder: its fix carries the helper
    bad.write_text(GOOD)
    read_only_folder.chmod(0o555)
    good = good_file(tmp_path)
    outcome = run(capsys, "check", "--fix", "--no-cache", str(tmp_path))
    assert outcome.errors("bad.py") == ["not written: its folder is read-only (mode 0555)"]
    assert bad.read_text() == GOOD
    assert_fixed(good)
    assert outcome.code == 2


# --- item 7: the helper before the files that import it -------------------------------------


def test_the_helper_is_written_before_the_first_file_importing_it(tmp_path, capsys,
                                                                  monkeypatch):
    root = _project(tmp_path)
    files = [good_file(root, f"f{number}.py") for number in range(3)]
    seen: list[tuple[str, bool]] = []
    original = writer.write_fixed

    def noting(path, data, before):
        seen.append((Path(path).name, (root / "_device.py").is_file()))
        return original(path, data, before)

    monkeypatch.setattr(writer, "write_fixed", noting)
    outcome = run(capsys, "check", "--fix", "--no-cache", str(root))
    assert outcome.code == 0
    assert seen == [(path.name, True) for path in files]
    for path in files:
        assert_fixed(path)
    assert "Wrote the device helper" not in outcome.err  # (json: nothing else printed)


def test_a_run_with_nothing_to_fix_writes_a_missing_helper(tmp_path, capsys):
    root = _project(tmp_path)
    user = root / "a.py"
    user.write_text("from _device import pick_device\n\nx = pick_device()\n")
    outcome = run(capsys, "check", "--fix", "--no-cache", str(root))
    assert outcome.code == 0, outcome
    assert _defined(root / "_device.py") >= {"pick_device"}
    assert user.read_text() == "from _device import pick_device\n\nx = pick_device()\n"


def test_a_run_with_nothing_to_fix_extends_a_helper_lacking_a_name(tmp_path, capsys):
    from cudalint.runtime.helper import helper_module_text

    root = _project(tmp_path)
    (root / "_device.py").write_text(helper_module_text(["pick_device"]))
    (root / "a.py").write_text("from _device import pick_device, synchronize\n\nsynchronize()\n")
    outcome = run(capsys, "check", "--fix", "--no-cache", str(root))
    assert outcome.code == 0, outcome
    assert _defined(root / "_device.py") >= {"pick_device", "synchronize"}


# A run of 100 files with two workers lasts about the kill window below, so the kills land
# from start-up to the last write, the helper's included (300 files and 20 trials were 40
# CPU-seconds for the same moments).
_FILES = 100
_TRIALS = 8


def test_a_run_killed_anywhere_leaves_no_file_importing_a_missing_helper(tmp_path, capsys):
    from cudalint.cli import main

    chance = random.Random(31)
    env = {**os.environ, "PYTHONPATH": SOURCE}
    env.pop(_KILL_ENV, None)
    for trial in range(_TRIALS):
        root = _project(tmp_path / f"t{trial}")
        for number in range(_FILES):
            (root / f"f{number:03}.py").write_text(GOOD)
        number = signal.SIGTERM if trial % 2 == 0 else signal.SIGKILL
        child = subprocess.Popen(
            [sys.executable, "-m", "cudalint", "check", "--fix", "--no-cache", "-j", "2", "."],
            cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(chance.uniform(0.05, 1.5))
        child.send_signal(number)
        _, err = child.communicate(timeout=60)
        assert _helper_missing(root) == [], (trial, number, err)
        if number == signal.SIGTERM and child.returncode not in (0, -signal.SIGTERM):
            # stopped like Ctrl-C (or it had finished before the signal came)
            assert child.returncode == 130, err
            assert b"cudalint: interrupted;" in err and b"internal error" not in err
        assert [p.name for p in root.glob(".*.tmp")] == []
        assert main(["check", "--fix", "--no-cache", "-j", "2", "-q", str(root)]) == 0
        capsys.readouterr()
        assert _helper_missing(root) == []
        for path in root.glob("f*.py"):
            assert_fixed(path)


_KILL_ENV = "CUDALINT_TEST_KILL_WORKER_ON"


def test_sigterm_of_a_run_in_one_process_stops_it_like_ctrl_c(tmp_path):
    root = _project(tmp_path)
    for number in range(60):
        (root / f"f{number:03}.py").write_text(GOOD)
    script = (
        "import os, signal, sys\n"
        "from cudalint.engine.running import runner\n"
        "from cudalint.cli import main\n"
        "check_file = runner.check_file\n"
        "def killing(path, *args, **kwargs):\n"
        "    if path.name == 'f010.py':\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return check_file(path, *args, **kwargs)\n"
        "runner.check_file = killing\n"
        "sys.exit(main(['check', '--fix', '--no-cache', '-j', '1', '.']))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": SOURCE})
    assert done.returncode == 130, done.stderr
    assert done.stderr.startswith("cudalint: interrupted; 10 files written:\n")
    assert _helper_missing(root) == []
    assert stat.S_ISREG(os.lstat(root / "_device.py").st_mode)


# --- item 8: line breaks that Python does not count -----------------------------------------

# str.splitlines ends a line at each of these; Python's tokenizer at none (in a comment).
_NOT_LINE_ENDS = ["\u2028", "\u2029", "\f", "\v", "\x85", "\x1c", "\x1d", "\x1e"]
_HEADERS = {
    "comments": "#!/usr/bin/env python\n# header {c} more\n# x\n"
                "from __future__ import annotations\nmodel = Net().cuda()\n",
    "future import kept": "# header {c} more\nfrom __future__ import annotations\nimport torch\n"
                          "torch.cuda.synchronize()\n",
}


def _fixed_alone(tmp_path: Path, capsys, source: str) -> tuple[Path, str, list]:
    """`source` fixed as `m.py` in a project of its own, which must compile: the project's
    root, the fixed text and its statements."""
    import ast

    root = _project(tmp_path)
    path = root / "m.py"
    path.write_bytes(source.encode())
    outcome = run(capsys, "check", "--fix", "--no-cache", str(path))
    text = path.read_bytes().decode()
    assert outcome.code == 0, (outcome, text)
    compile(text, str(path), "exec")
    return root, text, ast.parse(text).body


@pytest.mark.parametrize("layout", list(_HEADERS))
@pytest.mark.parametrize("character", _NOT_LINE_ENDS, ids=ascii)
def test_a_header_comment_with_a_character_str_splitlines_ends_a_line_at(
        tmp_path, capsys, character, layout):
    import ast

    root, text, body = _fixed_alone(tmp_path, capsys, _HEADERS[layout].format(c=character))
    assert isinstance(body[0], ast.ImportFrom) and body[0].module == "__future__"
    assert any(isinstance(node, ast.ImportFrom) and node.module == "_device" for node in body)
    assert f"# header {character} more\n" in text  # the comment whole, nothing inside it
    assert _helper_missing(root) == []


# Headers with no `from __future__`: the import goes after the header, never into a comment or
# a docstring that holds the character (where the helper's name would stay unbound).
_PLAIN_HEADERS = {
    "comment before imports": "#!/usr/bin/env python\n# header {c} more\nimport torch\n"
                              "model = torch.nn.Linear(1, 1).cuda()\n",
    "comment, no imports": "# header {c} more\n# x\nmodel = Net().cuda()\n",
    "docstring": '"""Doc {c} string."""\nmodel = Net().cuda()\n',
    "docstring, then comment": '"""Doc."""\n# header {c} more\nmodel = Net().cuda()\n',
    "CRLF": "# header {c} more\r\nimport torch\r\nmodel = Net().cuda()\r\n",
}


@pytest.mark.parametrize("layout", list(_PLAIN_HEADERS))
@pytest.mark.parametrize("character", _NOT_LINE_ENDS, ids=ascii)
def test_a_header_without_future_import_holding_a_character_str_splitlines_ends_a_line_at(
        tmp_path, capsys, character, layout):
    import ast

    original = _PLAIN_HEADERS[layout].format(c=character)
    root, text, body = _fixed_alone(tmp_path, capsys, original)
    [imported] = [index for index, node in enumerate(body)
                  if isinstance(node, ast.ImportFrom) and node.module == "_device"]
    [used] = [index for index, node in enumerate(body) if "pick_device()" in ast.unparse(node)]
    assert imported < used
    kept = original.split("\n", 2)[:2] if "docstring" not in layout else original.split("\n")[:1]
    assert all(line in text for line in kept)  # the header whole, nothing inside it
    assert _helper_missing(root) == []


@pytest.mark.parametrize("character", _NOT_LINE_ENDS, ids=ascii)
def test_a_notebook_cell_header_with_a_character_str_splitlines_ends_a_line_at(
        tmp_path, capsys, character):
    import ast
    import json

    cell = f"# header {character} more\nmodel = torch.nn.Linear(1, 1).cuda()\n"
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {},
                           "outputs": [], "source": cell}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = _project(tmp_path) / "nb.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    outcome = run(capsys, "check", "--fix", "--no-cache", str(path))
    assert outcome.code == 0, outcome
    [fixed] = json.loads(path.read_text(encoding="utf-8"))["cells"]
    source = "".join(fixed["source"])
    compile(source, "cell", "exec")
    assert source.startswith(f"# header {character} more\n# -- cudalint device helper")
    body = ast.parse(source).body
    [defined] = [index for index, node in enumerate(body)
                 if isinstance(node, ast.FunctionDef) and node.name == "pick_device"]
    [used] = [index for index, node in enumerate(body) if "pick_device()" in ast.unparse(node)]
    assert defined < used


def _broken_placement(monkeypatch: pytest.MonkeyPatch, how) -> None:
    from cudalint.engine.fixes import imports

    apply = imports.apply
    monkeypatch.setattr(imports, "apply", lambda code, edits: how(apply(code, edits)))


_FUTURE = "from __future__ import annotations\nimport torch\nmodel = Net().cuda()\n"


def test_a_fixed_file_that_would_not_compile_is_not_written(tmp_path, capsys, monkeypatch):
    root = _project(tmp_path)
    path = root / "m.py"
    path.write_text(_FUTURE)
    good = good_file(root)
    _broken_placement(monkeypatch, lambda code: "from _device import pick_device\n" + code
                      if "__future__" in code else code)
    outcome = run(capsys, "check", "--fix", "--no-cache", str(root))
    [error] = outcome.errors("m.py")
    assert error.startswith("not written: the fixed file would not compile: from __future__ ")
    assert outcome.codes("m.py") == ["CUD102"]
    assert path.read_text() == _FUTURE
    assert_fixed(good)
    assert outcome.code == 2


def _notebook(root: Path, *cells: str) -> Path:
    import json

    path = root / "nb.ipynb"
    path.write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                   "source": cell} for cell in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def test_a_fixed_notebook_cell_that_would_not_compile_is_not_written(tmp_path, capsys,
                                                                     monkeypatch):
    path = _notebook(_project(tmp_path), "await setup()\n", "model = Net().cuda()\n")
    original = path.read_text()
    _broken_placement(monkeypatch, lambda code: code.replace("def pick_device(", "def (")
                      if "__future__" not in code else code)
    outcome = run(capsys, "check", "--fix", "--no-cache", str(path))
    [error] = outcome.errors("nb.ipynb")  # (the cell with top-level await compiles, as in IPython)
    assert error.startswith("not written: the fixed cell 2 would not compile: ")
    assert path.read_text() == original
    assert outcome.code == 2


@pytest.mark.parametrize(("name", "lost", "message"), [
    ("m.py", ("from _device import pick_device\n", "# from _device import pick_device\n"),
     "the fixed file would not bind pick_device, which it uses"),
    ("nb.ipynb", ("def pick_device(", "def lost("),
     "the fixed notebook would not bind pick_device, which its cells use"),
])
def test_a_fixed_file_whose_helper_is_lost_is_not_written(tmp_path, capsys, monkeypatch,
                                                          name, lost, message):
    root = _project(tmp_path)
    if name.endswith(".ipynb"):  # (a notebook's helper is inline, atop the cell using it)
        path = _notebook(root, "import torch\n", "model = Net().cuda()\n")
    else:
        path = root / name
        path.write_text(_FUTURE)
    original = path.read_text()
    _broken_placement(monkeypatch, lambda code: code.replace(*lost))
    outcome = run(capsys, "check", "--fix", "--no-cache", str(root))
    assert outcome.errors(name) == [f"not written: {message}; a bug in cudalint"]
    assert path.read_text() == original
    assert outcome.code == 2


def test_a_file_the_compiler_refuses_as_read_is_fixed_all_the_same(tmp_path, capsys):
    """`ast` reads a `break` outside a loop, CPython's compiler refuses it: the file's own
    error, which the fix keeps, is no reason to leave the fix unwritten."""
    root = _project(tmp_path)
    source = "import torch\nmodel = Net().cuda()\nbreak\n"
    path = root / "m.py"
    path.write_text(source)
    notebook = _notebook(root, "import torch\n", "model = Net().cuda()\nbreak\n")
    outcome = run(capsys, "check", "--fix", "--no-cache", str(root))
    assert outcome.errors("m.py") == outcome.errors("nb.ipynb") == []
    assert_fixed(path)
    assert "model = Net().to(pick_device())\\nbreak\\n" in notebook.read_text()


def test_a_notebook_fixed_soundly_is_written(tmp_path, capsys):
    path = _notebook(_project(tmp_path), "await setup()\n", "import torch\n",
                     "model = Net().cuda()\n")
    outcome = run(capsys, "check", "--fix", "--no-cache", str(path))
    assert outcome.code == 0, outcome
    assert "pick_device()" in path.read_text()


# --- item 2: an editor's save during the rename ---------------------------------------------

_ORIGINAL = b"import torch\nx = torch.zeros(1).cuda()\n"
_FIXED = b"from _device import pick_device\nimport torch\nx = torch.zeros(1).to(pick_device())\n"


def _save_by_rename(path: Path, data: bytes) -> None:
    """As most editors save: a new file renamed over the old (no lock)."""
    temporary = path.with_name(f"{path.name}.saving")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def _save_in_place(path: Path, data: bytes) -> None:
    """As an editor that writes the file itself saves, taking the advisory lock as a
    cooperating writer does (on the file the path names once the lock is held)."""
    import fcntl

    while True:
        with open(path, "r+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            same = os.fstat(handle.fileno()).st_ino == os.stat(path).st_ino
            if same:
                handle.truncate(0)
                handle.write(data)
                return


def test_no_save_landing_during_a_fix_is_lost(tmp_path):
    import threading

    chance = random.Random(2)
    path = tmp_path / "train.py"
    path.write_bytes(_ORIGINAL)
    spans = []
    for _ in range(9):  # how long one write takes here
        path.write_bytes(_ORIGINAL)
        started = time.perf_counter()
        write_fixed(path, _FIXED, _ORIGINAL)
        spans.append(time.perf_counter() - started)
        assert path.read_bytes() == _FIXED  # with no save beside it, the fix is written
    span = sorted(spans)[4]
    outcomes = {"written": 0, "refused": 0}
    for trial in range(200):
        path.write_bytes(_ORIGINAL)
        save = _save_by_rename if trial % 2 else _save_in_place
        saved: list[bytes] = []
        delay = chance.uniform(0.2 * span, 1.3 * span)  # the save lands during the write

        def saver(save=save, saved=saved, delay=delay, trial=trial):
            end = time.perf_counter() + delay
            while time.perf_counter() < end:
                pass
            data = b"# saved in an editor %d\n" % trial + _ORIGINAL
            save(path, data)
            saved.append(data)

        thread = threading.Thread(target=saver)
        thread.start()
        try:
            write_fixed(path, _FIXED, _ORIGINAL)
            outcomes["written"] += 1
        except WriteError as error:
            assert str(error) in ("not written: the file changed since it was read",
                                  "not written: the file changed during the fix",
                                  "not written: the file was replaced while it was checked")
            outcomes["refused"] += 1
        thread.join()
        assert path.read_bytes() == saved[-1], (trial, save.__name__, path.read_bytes())
        assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]
    # Whether a save lands before or after the rename depends on the scheduler (a busy machine
    # runs the saver first every time); what must hold is that the race happened and no trial
    # lost the save.
    assert outcomes["refused"], outcomes


# --- items 15/16: error lines and the exit code in every mode; a closed pipe ----------------


def test_diff_shows_a_file_it_could_not_check_and_exits_2(tmp_path, capsys, monkeypatch):
    from cudalint.cli import main

    root = _project(tmp_path)
    for number in range(40):  # two worker processes
        good_file(root, f"f{number:02}.py")
    bad = good_file(root, "f20_bad.py")
    monkeypatch.setenv(_KILL_ENV, bad.name)  # its worker dies, as under max-memory
    code = main(["check", "--diff", "--no-cache", "-j", "2", str(root)])
    captured = capsys.readouterr()
    assert code == 2
    assert f"{bad}:1:1: the checker process died (signal 9, SIGKILL)" in captured.err
    assert "+model = Net().to(pick_device())" in captured.out  # the others' diffs
    assert bad.read_text() == GOOD


def test_fix_only_shows_a_file_it_could_not_write_and_exits_2(tmp_path, capsys):
    from cudalint.cli import main

    root = _project(tmp_path)
    bad = good_file(root, "bad.py")
    bad.chmod(0o444)
    good = good_file(root)
    code = main(["check", "--fix-only", "--no-cache", str(root)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err == f"{bad}:1:1: not written: the file is read-only (mode 0444)\n"
    assert bad.read_text() == GOOD
    assert_fixed(good)


def test_exit_zero_still_exits_2_where_a_file_was_not_written(tmp_path, capsys):
    from cudalint.cli import main

    root = _project(tmp_path)
    good_file(root, "bad.py").chmod(0o444)
    assert main(["check", "--fix", "--exit-zero", "--no-cache", str(root)]) == 2
    capsys.readouterr()


@pytest.mark.parametrize("fix", [True, False], ids=["fix", "check"])
def test_a_closed_pipe_ends_the_output_quietly(tmp_path, fix):
    """`cudalint check --fix . | head -1`: no message, and the exit code the run found."""
    root = _project(tmp_path)
    for number in range(30):
        good_file(root, f"f{number:02}.py")
    command = [sys.executable, "-m", "cudalint", "check", "--no-cache", *(["--fix"] * fix), "."]
    child = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": SOURCE})
    child.stdout.close()  # the reader is gone before anything is written
    err = child.stderr.read()
    child.wait(timeout=120)
    assert err == b""
    assert child.returncode == (0 if fix else 1)
    if fix:
        for number in range(30):
            assert_fixed(root / f"f{number:02}.py")

"""Hostile trees, read side: each odd file is one error line for itself (or is skipped, for a
link out of the tree), stays as it was, and the rest of the tree is still checked and fixed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.engine.reading.reader import ReadError, read_regular
from tests.engine.fixing_run import GOOD, assert_fixed, good_file, run

CUDA_LINE = "y = torch.zeros(1).cuda()\n"
PYTHON_CASES = {
    "sum-of-322-terms": ("x = " + " + ".join(["1"] * 322) + "\n", "nested more than"),
    "199-nested-calls": ("x = " + "f(" * 199 + ")" * 199 + "\n", "nested more than"),
    "5000-long-attribute-chain": ("x = a" + ".b" * 5000 + "\n", "nested more than"),
    "1000-nested-parentheses": ("x = " + "(" * 1000 + "1" + ")" * 1000 + "\n",
                                "SyntaxError: too many nested parentheses"),
    "unclosed-parenthesis": ("x = (1,\n", "SyntaxError: '(' was never closed"),
    "null-byte": ("x = 1\0\n", "contains null bytes"),
}


@pytest.fixture
def alarm():
    """Fail, rather than hang the suite, when a run blocks (a FIFO opened for reading)."""
    def expired(_number, _frame):  # not TimeoutError: an OSError, which readers catch
        pytest.fail("the run blocked")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize(("body", "reason"), list(PYTHON_CASES.values()), ids=list(PYTHON_CASES))
def test_python_that_libcst_cannot_take_is_one_error_line(tmp_path, capsys, body, reason):
    bad = tmp_path / "bad.py"
    original = "import torch\n" + body + CUDA_LINE
    bad.write_text(original)
    good = good_file(tmp_path)
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    # valid Python that cudalint could not check exits 2; a syntax error is the file's own
    assert outcome.code == (2 if "nested more than" in reason else 1) and outcome.err == ""
    [error] = outcome.errors("bad.py")
    assert reason in error
    assert bad.read_text() == original
    assert_fixed(good)


def test_a_syntax_error_has_cpythons_message_and_position(tmp_path, capsys):
    (tmp_path / "bad.py").write_text("import torch\nx = (1,\n" + CUDA_LINE)
    outcome = run(capsys, "check", str(tmp_path))
    [error] = [f for f in outcome.findings if f["code"] is None]
    assert error["message"] == "SyntaxError: '(' was never closed"
    assert (error["location"]["row"], error["location"]["column"]) == (2, 5)


def test_a_utf16_file_is_said_to_be_not_utf8(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_bytes(("import torch\n" + CUDA_LINE).encode("utf-16"))
    good = good_file(tmp_path)
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.errors("bad.py") == ["not UTF-8 (UTF-16 text); not checked"]
    assert bad.read_bytes() == ("import torch\n" + CUDA_LINE).encode("utf-16")
    assert_fixed(good)


def test_a_form_feed_in_indentation_is_fixed_and_kept(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nif True:\n\f    y = torch.zeros(1).cuda()\n")
    good = good_file(tmp_path)
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.code == 0 and outcome.findings == []
    text = bad.read_text()
    assert "\n\f    y = torch.zeros(1).to(pick_device())\n" in text
    compile(text, "bad.py", "exec")
    assert_fixed(good)


def test_1300_nested_brackets_do_not_crash_the_interpreter(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nx = " + "[" * 1300 + "]" * 1300 + "\n" + CUDA_LINE)
    source = str(Path(__file__).parents[2] / "src")
    result = subprocess.run([sys.executable, "-m", "cudalint", "check", str(bad)],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": source})
    assert result.returncode == 1, result
    assert "SyntaxError: too many nested parentheses" in result.stdout
    assert result.stderr == ""


@pytest.mark.parametrize("name", ["x.py", "nb.ipynb", "libops.so", "requirements.txt"])
def test_a_fifo_is_never_opened(tmp_path, capsys, alarm, name):
    os.mkfifo(tmp_path / name)
    good = good_file(tmp_path)
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.errors(name) == ["not a regular file (a FIFO); skipped"]
    assert_fixed(good)


def test_a_fifo_named_on_the_command_line_is_an_error_line(tmp_path, capsys, alarm):
    os.mkfifo(tmp_path / "x.py")
    good = good_file(tmp_path)
    outcome = run(capsys, "check", "--fix", str(tmp_path / "x.py"), str(good))
    assert outcome.errors("x.py") == ["not a regular file or folder; skipped"]
    assert_fixed(good)


def test_a_device_is_never_read():
    with pytest.raises(ReadError, match=r"not a regular file \(a character device\)"):
        read_regular(Path("/dev/zero"), 1000)


def test_links_out_of_the_tree_are_not_followed(tmp_path, capsys):
    elsewhere, project = tmp_path / "elsewhere", tmp_path / "project"
    elsewhere.mkdir()
    project.mkdir()
    victim = elsewhere / "victim.py"
    victim.write_text(GOOD)
    (project / "link.py").symlink_to(victim)
    (project / "zero.py").symlink_to("/dev/zero")
    good = good_file(project)
    outcome = run(capsys, "check", "--fix", str(project))
    assert outcome.code == 0
    assert victim.read_text() == GOOD
    assert (project / "link.py").is_symlink()
    assert_fixed(good)


def test_a_link_out_of_the_project_named_explicitly_is_an_error_line(tmp_path, capsys):
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "pyproject.toml").write_text("[tool.cudalint]\n")
    victim = tmp_path / "victim.py"
    victim.write_text(GOOD)
    link = tmp_path / "project" / "link.py"
    link.symlink_to(victim)
    good = good_file(tmp_path / "project")
    outcome = run(capsys, "check", "--fix", str(link), str(good))
    assert outcome.errors("link.py") == ["a symbolic link to a file outside the project; skipped"]
    assert victim.read_text() == GOOD
    assert_fixed(good)


def test_a_link_inside_the_tree_stands_for_its_file(tmp_path, capsys):
    real = tmp_path / "real.py"
    real.write_text(GOOD)
    (tmp_path / "alias.py").symlink_to(real)
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.code == 0 and outcome.findings == []
    assert (tmp_path / "alias.py").is_symlink()
    assert_fixed(real)


def test_a_file_over_max_file_size_is_skipped_with_a_line(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.cudalint]\nmax-file-size = 2000\n")
    big = tmp_path / "big.py"
    original = GOOD + "# padding\n" * 300
    big.write_text(original)
    good = good_file(tmp_path)
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.errors("big.py") == ["skipped: 3 kB, more than max-file-size (2 kB)"]
    assert big.read_text() == original
    assert_fixed(good)


def test_an_unreadable_folder_is_one_error_line(tmp_path, capsys, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "inside.py").write_text(GOOD)
    good = good_file(tmp_path)
    scandir = os.scandir

    def refusing(path=None):  # chmod 000 means nothing to root, who runs CI
        if Path(os.fsdecode(path)) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.errors("locked") == ["cannot read the folder: Permission denied; skipped"]
    assert (locked / "inside.py").read_text() == GOOD
    assert_fixed(good)


def test_a_non_string_line_in_a_notebook_cell_is_kept(tmp_path, capsys):
    notebook = tmp_path / "nb.ipynb"
    original = ('{"cells": [{"cell_type": "code", "source": ["import torch\\n", 7, '
                '"m = Net().cuda()\\n"]}, {"cell_type": "code", "source": '
                '["import torch\\n", "n = Net().cuda()\\n"]}]}')
    notebook.write_text(original)
    good = good_file(tmp_path)
    outcome = run(capsys, "check", "--fix", str(tmp_path))
    assert outcome.errors("nb.ipynb") == [
        "cell `source` is not text nor a list of strings; cell not checked"]
    text = notebook.read_text()
    assert '"import torch\\n", 7, "m = Net().cuda()\\n"' in text  # the first cell as it was
    assert "n = Net().to(pick_device())" in text  # the second cell fixed
    assert_fixed(good)

"""Configuration values are checked when the file is loaded: one line naming the file and the
key, exit 2, for every command that reads it, before any file is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalint.cli import main

CUDA_SCRIPT = "import torch\nmodel = Net().cuda()\n"
BAD_VALUES = {
    "helper": ('helper = "not a module!"', "helper: 'not a module!' is not a module name"),
    "target-torch": ('target-torch = "banana"', "target-torch: 'banana' is not a version"),
    "max-file-size-zero": ("max-file-size = 0", "max-file-size must be a positive number"),
    "max-file-size-bool": ("max-file-size = true", "max-file-size must be a whole number"),
    "max-memory-negative": ("max-memory = -1", "max-memory must be a positive number"),
    "max-memory-string": ('max-memory = "4GB"', "max-memory must be a whole number"),
    "respect-gitignore-int": ("respect-gitignore = 1", "respect-gitignore must be true or false"),
    "per-file-ignores-code": ('per-file-ignores = {"tests/*" = ["CUD9999"]}',
                              "unknown rule selector 'CUD9999'"),
    "exclude-not-strings": ("exclude = [1, 2]", "exclude must be a list of strings"),
}
COMMANDS = {
    "check": ["check", "."],
    "fix": ["check", "--fix", "."],
    "diff": ["check", "--diff", "."],
    "report": ["report", "."],
}


@pytest.mark.parametrize("command", list(COMMANDS.values()), ids=list(COMMANDS))
@pytest.mark.parametrize(("line", "message"), list(BAD_VALUES.values()), ids=list(BAD_VALUES))
def test_a_bad_value_stops_every_command_on_one_line(chdir_tmp, capsys, command, line, message):
    (chdir_tmp / "pyproject.toml").write_text(f"[tool.cudalint]\n{line}\n")
    script = chdir_tmp / "train.py"
    script.write_text(CUDA_SCRIPT)
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(Path("pyproject.toml").resolve()) in err and message in err, err
    assert script.read_text() == CUDA_SCRIPT


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_an_empty_code_list_is_a_usage_error(chdir_tmp, capsys, option):
    (chdir_tmp / "train.py").write_text(CUDA_SCRIPT)
    assert main(["check", option, "", "--fix", "."]) == 2
    assert capsys.readouterr().err == f"cudalint: error: argument {option}: no rule codes given\n"
    assert (chdir_tmp / "train.py").read_text() == CUDA_SCRIPT


# The same table, spelled every way TOML allows: each is read (issue 31, item 6).
SPELLINGS = {
    "dotted-keys": '[tool]\ncudalint.extend-exclude = ["vendored"]\n',
    "inline-table": 'tool = { cudalint = { extend-exclude = ["vendored"] } }\n',
    "spaces": '[ tool.cudalint ]\nextend-exclude = ["vendored"]\n',
    "quoted": '[tool."cudalint"]\nextend-exclude = ["vendored"]\n',
    "quoted-both": "['tool' . 'cudalint']\nextend-exclude = [\"vendored\"]\n",
    "crlf-dotted-keys": '[tool]\r\ncudalint.extend-exclude = ["vendored"]\r\n',
    "after-a-multiline-array": ('[tool]\nother = [\n[1],\n[2]\n]\n'
                                'cudalint.extend-exclude = ["vendored"]\n'),
    "after-a-multiline-string": ('[tool]\nother = """\n[project]\n"""\n'
                                 'cudalint.extend-exclude = ["vendored"]\n'),
    "inline-after-a-multiline-array": ('tool = { other = [\n1], cudalint = { extend-exclude = '
                                       '["vendored"] } }\n'),
}


@pytest.mark.parametrize("text", list(SPELLINGS.values()), ids=list(SPELLINGS))
def test_every_spelling_of_the_table_is_read(chdir_tmp, capsys, text):
    (chdir_tmp / "pyproject.toml").write_text(text)
    (chdir_tmp / "vendored").mkdir()
    (chdir_tmp / "vendored" / "lib.py").write_text(CUDA_SCRIPT)
    (chdir_tmp / "train.py").write_text(CUDA_SCRIPT)
    assert main(["check", "--no-cache", "--output-format", "concise", "."]) == 1
    out = capsys.readouterr().out
    assert "train.py" in out and "vendored" not in out, out
    main(["check", "--no-cache", "--fix", "."])
    assert (chdir_tmp / "vendored" / "lib.py").read_text() == CUDA_SCRIPT
    assert (chdir_tmp / "train.py").read_text() != CUDA_SCRIPT


def test_the_word_in_a_string_or_a_comment_is_no_table(chdir_tmp, capsys):
    (chdir_tmp / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["cudalint"]\n# [tool.cudalint]\n')
    (chdir_tmp / "vendored").mkdir()
    (chdir_tmp / "vendored" / "lib.py").write_text(CUDA_SCRIPT)
    assert main(["check", "--no-cache", "--output-format", "concise", "."]) == 1
    assert "vendored" in capsys.readouterr().out


@pytest.mark.parametrize("text", [
    '[project]\nname = "p"\n',
    '[project]\nname = "cudalint-demo"\ndependencies = ["cudalint>=0.2", "torch"]\n'
    '[project.optional-dependencies]\ndev = ["pytest", "cudalint"]\nlint = [\n  "cudalint",\n]\n'
    '[project.scripts]\nlint = "cudalint.cli:main"\n# see [tool.ruff], not tool . cudalint\n',
], ids=["without-the-word", "the-word-as-a-dependency"])
def test_a_pyproject_without_the_table_is_not_parsed(chdir_tmp, text):
    """Start-up: a pyproject.toml that names cudalint only as a dependency or a script's value
    (or not at all) costs no TOML import. (Where `cudalint` could be a key, as a script's
    name or a key of another tool's table, the file is parsed: the parser decides.)"""
    import subprocess
    import sys

    (chdir_tmp / "pyproject.toml").write_text(text)
    (chdir_tmp / "clean.py").write_text("x = 1\n")
    probe = ("import sys\nfrom cudalint.config import load_config\nfrom pathlib import Path\n"
             "load_config(Path('.'))\nprint('tomllib' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=chdir_tmp, capture_output=True,
                          text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"


def test_a_huge_pyproject_is_one_line_and_never_read_whole(chdir_tmp, capsys):
    big = chdir_tmp / "pyproject.toml"
    with big.open("wb") as file:  # sparse: a gigabyte that takes no disk
        file.write(b"[tool.cudalint]\n")
        file.truncate(1 << 30)
    (chdir_tmp / "train.py").write_text(CUDA_SCRIPT)
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert main(["check", "--no-cache", "."]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(big) in err and "larger than" in err, err
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 100_000


# Odd values of every key: one line naming the key, never an internal error (item 17).
_DEEP = "[" * 5000 + "]" * 5000
ODD_VALUES = {
    **{f"{key}-deep": (f"{key} = {_DEEP}", "nested") for key in (
        "select", "exclude", "per-file-ignores", "helper", "max-memory")},
    "deep-table": ("x = " + "{a = " * 3000 + "1" + "}" * 3000, "nested"),
    "max-memory-huge": ("max-memory = 99999999999999999999", "max-memory must be at most"),
    "max-memory-int64": ("max-memory = 9223372036854775807", "max-memory must be at most"),
    "max-file-size-huge": ("max-file-size = 9223372036854775807",
                           "max-file-size must be at most"),
    "max-memory-tiny": ("max-memory = 1", "max-memory must be at least"),
    "target-torch-long": ('target-torch = "' + "9" * 5000 + '.1"',
                          "is not a version such as '2.6'"),
    "exclude-bad-range": ('exclude = ["**/[z-a]"]', "exclude: '**/[z-a]' is not a pattern"),
    "extend-exclude-bad-range": ('extend-exclude = ["x/**/[z-a]"]',
                                 "extend-exclude: 'x/**/[z-a]' is not a pattern"),
    "select-table": ("select = {a = {b = 1}}", "select must be a list"),
    "helper-list": ('helper = ["a"]', "helper must be a string"),
    "fail-on-int": ("fail-on = 1", "fail-on must be a string"),
    "known-first-party-int": ("known-first-party = 3", "known-first-party must be a list"),
    "per-file-ignores-list": ('per-file-ignores = ["a"]', "per-file-ignores must be a table"),
    "per-file-ignores-nested": ('per-file-ignores = {"*" = [["CUD1"]]}',
                                "must be a list of strings"),
    "max-memory-digits": ("max-memory = " + "9" * 5000,
                          "invalid TOML: line 2: max-memory: a number of more than 4300 digits"),
    "exclude-kinds-unknown": ('exclude-kinds = ["pyhton"]',
                              "exclude-kinds: 'pyhton' is not a kind of file"),
}


@pytest.mark.parametrize("command", list(COMMANDS.values()), ids=list(COMMANDS))
@pytest.mark.parametrize(("line", "message"), list(ODD_VALUES.values()), ids=list(ODD_VALUES))
def test_an_odd_value_is_one_line_naming_the_key(chdir_tmp, capsys, command, line, message):
    (chdir_tmp / "pyproject.toml").write_text(f"[tool.cudalint]\n{line}\n")
    for number in range(40):  # enough files for worker processes
        (chdir_tmp / f"train{number}.py").write_text(CUDA_SCRIPT)
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err, err
    assert message in err, err
    assert (chdir_tmp / "train0.py").read_text() == CUDA_SCRIPT


def test_a_bad_gitignore_pattern_is_left_out_not_an_internal_error(chdir_tmp, capsys):
    (chdir_tmp / ".gitignore").write_text("**/[z-a]\nignored.py\n")
    (chdir_tmp / "ignored.py").write_text(CUDA_SCRIPT)
    (chdir_tmp / "train.py").write_text(CUDA_SCRIPT)
    assert main(["check", "--no-cache", "--output-format", "concise", "."]) == 1
    captured = capsys.readouterr()
    assert "internal error" not in captured.err
    assert "train.py" in captured.out and "ignored.py" not in captured.out

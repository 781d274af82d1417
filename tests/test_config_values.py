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

"""`cudalint check`'s command line is parsed without argparse when it is plain; whatever it
is, the result is argparse's: the same values, or argparse's own error and exit code."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudalint import cli

# Tokens a command line is made of: every option spelt in full, abbreviated, with `=value`,
# values good and bad, paths, and what argparse treats specially (`--`, `-`, `-h`, `-qj2`).
_TOKENS = [
    *cli._BY_FLAG, "--fix=1", "--select=CUD1", "--select=", "--output-format=json",
    "--output=json", "--no-c", "--exit", "-j=2", "-j2", "-qj2", "-h", "--help", "--", "-",
    "-1", "--unknown", "CUD1", "cud1, CUD201", "", "json", "concise", "xml", "2", "x",
    "--fail-on=info", "warning", "error", "Error",
    "train.py", "src", "a b.py", "-x.py",
]


def _argparse(args: list[str]) -> dict[str, object] | str:
    """argparse's answer: the values, or its error."""
    try:
        return vars(cli._check_parser().parse_args(args))
    except cli.UsageError as error:
        return f"error: {error}"
    except SystemExit:  # --help
        return "help"


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=7))
def test_a_plain_parse_is_argparse_s(args):
    plain = cli._parse_plainly(args)
    if plain is not None:
        assert vars(plain) == _argparse(args), args


@pytest.mark.parametrize("args", [
    [], ["."], ["--exit-zero", "--output-format", "concise", "src", "tests"],
    ["src", "--fix", "--unsafe-fixes"], ["-j", "2", "-q", "--select=CUD1,cud2", "x.py"],
    ["-", "--stdin-filename", "train.py", "--config", "pyproject.toml"],
    ["--no-cache", "--extend-select", "CUD4", "--ignore", "CUD101", "--statistics"],
    ["--force-exclude", "--fail-on", "info", "a.py"], ["--fail-on=error", "."],
])
def test_common_command_lines_take_the_plain_path(args, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("argparse was used")

    expected = _argparse(args)
    monkeypatch.setattr(cli, "_check_parser", refuse)
    assert vars(cli.parse_check(args)) == expected


@pytest.mark.parametrize(("args", "error"), [
    (["a", "--fix", "b"], "unrecognized arguments: b"),  # a second run of paths
    (["--select", ""], "argument --select: no rule codes given"),
    (["--jobs", "x"], "argument -j/--jobs: invalid int value: 'x'"),
    (["--fix=1"], "argument --fix: ignored explicit argument '1'"),
    (["--output-format", "xml"], "argument --output-format: invalid choice: 'xml'"),
    (["--select"], "argument --select: expected one argument"),
])
def test_what_the_plain_path_refuses_argparse_reports(args, error, capsys):
    assert cli._parse_plainly(args) is None
    assert cli.main(["check", *args]) == 2
    assert capsys.readouterr().err.startswith(f"cudalint: error: {error}")


def test_abbreviations_and_help_are_argparse_s(capsys):
    assert vars(cli.parse_check(["--output", "json", "--no-c"])) == _argparse(
        ["--output-format", "json", "--no-cache"])
    assert cli.main(["check", "--help"]) == 0
    assert "--output-format {full,concise,json" in capsys.readouterr().out
    assert isinstance(cli._check_parser(), argparse.ArgumentParser)

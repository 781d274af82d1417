"""`fail-on` / `--fail-on`: which findings fail a run (exit 1). A finding fails it when its
severity is at least the threshold (error > warning > info); the default is warning, since info
findings are harmless off CUDA. Every finding is still printed; only the exit code changes."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
import yaml

from cudalint import cli, config
from cudalint.cli import main

# One file per severity, each with exactly one finding of it.
FILES = {
    "error": ("error.py", "import torch\nx = torch.zeros(3).cuda()\n", "CUD102"),
    "warning": ("warning.py", "import torch\ntorch.cuda.manual_seed(0)\n", "CUD105"),
    "info": ("info.py", "import torch\ntorch.backends.cudnn.benchmark = True\n", "CUD107"),
}
RANK = {"info": 1, "warning": 2, "error": 3}
THRESHOLDS = ["error", "warning", "info"]
CASES = [(threshold, severity) for threshold in THRESHOLDS for severity in FILES]
HOOKS = Path(__file__).resolve().parents[1] / ".pre-commit-hooks.yaml"


@pytest.fixture
def project(chdir_tmp: Path) -> Path:
    for name, text, _code in FILES.values():
        (chdir_tmp / name).write_text(text)
    return chdir_tmp


def _fail_on(root: Path, level: str) -> None:
    (root / "pyproject.toml").write_text(f'[tool.cudalint]\nfail-on = "{level}"\n')


def _check(capsys, *args: str) -> tuple[int, list[dict]]:
    code = main(["check", "--no-cache", "--output-format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_the_files_give_one_finding_of_their_severity(project, capsys):
    for severity, (name, _text, code) in FILES.items():
        _, found = _check(capsys, "--fail-on", "info", name)
        assert [(f["code"], f["severity"]) for f in found] == [(code, severity)]


@pytest.mark.parametrize(("threshold", "severity"), CASES)
def test_the_flag_fails_at_or_above_its_severity(project, capsys, threshold, severity):
    code, found = _check(capsys, "--fail-on", threshold, FILES[severity][0])
    assert code == (1 if RANK[severity] >= RANK[threshold] else 0)
    assert [f["code"] for f in found] == [FILES[severity][2]]  # printed, failing or not


@pytest.mark.parametrize(("threshold", "severity"), CASES)
def test_the_config_key_fails_at_or_above_its_severity(project, capsys, threshold, severity):
    _fail_on(project, threshold)
    code, found = _check(capsys, FILES[severity][0])
    assert code == (1 if RANK[severity] >= RANK[threshold] else 0)
    assert [f["code"] for f in found] == [FILES[severity][2]]


@pytest.mark.parametrize("severity", list(FILES))
def test_the_default_is_warning(project, capsys, severity):
    code, _ = _check(capsys, FILES[severity][0])
    assert code == (0 if severity == "info" else 1)


@pytest.mark.parametrize("threshold", THRESHOLDS)
def test_every_finding_is_printed_whatever_the_threshold(project, capsys, threshold):
    code = main(["check", "--no-cache", "--fail-on", threshold, "."])
    out = capsys.readouterr().out
    assert code == 1  # the error fails every threshold
    for _name, _text, rule in FILES.values():
        assert f" {rule} " in out, out
    assert "Found 3 findings: 1 error, 1 warning, 1 info." in out
    for other in ("warning.py", "info.py"):
        code = main(["check", "--no-cache", "--output-format", "concise", "--fail-on",
                     threshold, other])
        assert other in capsys.readouterr().out


def test_the_flag_beats_the_config_key(project, capsys):
    _fail_on(project, "error")
    assert _check(capsys, "--fail-on", "info", "info.py")[0] == 1
    _fail_on(project, "info")
    assert _check(capsys, "--fail-on", "error", "warning.py")[0] == 0
    assert _check(capsys, "info.py")[0] == 1


@pytest.mark.parametrize(("line", "message"), [
    ('fail-on = "fatal"', "fail-on: 'fatal' is not one of 'error', 'warning', 'info'"),
    ('fail-on = "Warning"', "fail-on: 'Warning' is not one of"),
    ("fail-on = 2", "fail-on must be a string"),
])
def test_a_bad_config_value_is_one_line_and_exit_two(project, capsys, line, message):
    (project / "pyproject.toml").write_text(f"[tool.cudalint]\n{line}\n")
    assert main(["check", "--fail-on", "info", "."]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert str(project / "pyproject.toml") in captured.err and message in captured.err


def test_a_bad_flag_value_is_a_usage_error(project, capsys):
    assert main(["check", "--fail-on", "fatal", "."]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --fail-on: invalid choice: 'fatal'" in err


def test_a_file_that_cannot_be_checked_fails_every_threshold(project, capsys):
    (project / "broken.py").write_text("def f(:\n    return x.cuda()\n")
    code, found = _check(capsys, "--fail-on", "error", "broken.py", "info.py")
    assert code == 1
    assert [f["code"] for f in found] == [None, "CUD107"]


def test_exit_zero_and_fix_only_still_exit_zero(project, capsys):
    assert main(["check", "--no-cache", "--fail-on", "info", "--exit-zero", "."]) == 0
    capsys.readouterr()
    assert main(["check", "--no-cache", "--fail-on", "info", "--fix-only", "."]) == 0


def test_diff_still_exits_one_for_fixes_to_apply(project, capsys):
    """--diff's exit code says whether there is something to fix, whatever the threshold."""
    assert main(["check", "--no-cache", "--fail-on", "error", "--diff", "warning.py"]) == 1
    assert (project / "warning.py").read_text() == FILES["warning"][1]


def test_fix_fails_on_what_remains(project, capsys):
    """After --fix, only the findings left count: the error fixed, the info left passes."""
    mixed = project / "mixed.py"
    mixed.write_text(FILES["error"][1] + "torch.backends.cudnn.benchmark = True\n")
    assert main(["check", "--no-cache", "--fix", "mixed.py"]) == 0
    out = capsys.readouterr().out
    assert "CUD107" in out and "pick_device()" in mixed.read_text()
    assert main(["check", "--no-cache", "--fail-on", "info", "mixed.py"]) == 1


def test_a_guarded_warning_is_info_and_passes_by_default(project, capsys):
    (project / "guarded.py").write_text(
        "import torch\nif torch.cuda.is_available():\n    torch.cuda.manual_seed(0)\n")
    code, found = _check(capsys, "guarded.py")
    assert code == 0
    assert [(f["code"], f["severity"], f["guarded"]) for f in found] == [("CUD105", "info", True)]


def test_a_cached_run_exits_as_a_fresh_one(project, capsys):
    for _ in range(2):  # the second run replays the cache
        assert main(["check", "--fail-on", "error", "warning.py"]) == 0
        assert main(["check", "info.py"]) == 0
        assert main(["check", "--fail-on", "info", "info.py"]) == 1
    assert (project / ".cudalint_cache").is_dir()


def _stdin(monkeypatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def test_standard_input_follows_the_threshold(project, capsys, monkeypatch):
    _stdin(monkeypatch, FILES["info"][1])
    assert main(["check", "--stdin-filename", "buffer.py", "-"]) == 0
    _stdin(monkeypatch, FILES["info"][1])
    assert main(["check", "--fail-on", "info", "--stdin-filename", "buffer.py", "-"]) == 1
    assert capsys.readouterr().out.count("Found 1 info.") == 2  # printed both times
    _fail_on(project, "info")
    _stdin(monkeypatch, FILES["info"][1])
    assert main(["check", "--fix", "--stdin-filename", "buffer.py", "-"]) == 1
    assert capsys.readouterr().out == FILES["info"][1]  # the buffer, unchanged
    _stdin(monkeypatch, "def f(:\n    return x.cuda()\n")
    assert main(["check", "--fail-on", "error", "-"]) == 1


def _hook_entry(hook_id: str) -> list[str]:
    hooks = {hook["id"]: hook for hook in yaml.safe_load(HOOKS.read_text())}
    return hooks[hook_id]["entry"].split()


@pytest.mark.parametrize("hook_id", ["cudalint", "cudalint-fix"])
def test_the_pre_commit_hooks_take_the_default_through_the_config(project, capsys, hook_id):
    """pre-commit runs the hook's entry with the staged files: an info finding alone passes,
    and fails with `fail-on = "info"` in [tool.cudalint]."""
    entry = _hook_entry(hook_id)
    assert entry[:3] == ["cudalint", "check", "--force-exclude"]
    assert not any(arg.startswith("--fail-on") for arg in entry)
    assert main([*entry[1:], "info.py"]) == 0
    assert "CUD107" in capsys.readouterr().out
    _fail_on(project, "info")
    assert main([*entry[1:], "info.py"]) == 1
    assert "CUD107" in capsys.readouterr().out


def test_the_command_line_knows_the_config_levels():
    assert cli.FAIL_ON == config.FAIL_ON
    assert config.DEFAULT_FAIL_ON in config.FAIL_ON
    option = cli._BY_FLAG["--fail-on"]
    assert tuple(option.choices) == config.FAIL_ON and option.default is None


def test_help_documents_the_option(capsys):
    assert main(["check", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--fail-on {error,warning,info}" in help_text
    assert "else warning" in help_text

"""The command line's contracts: exit codes, noqa, bad input, output formats, config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.cli import main

CUDA_SCRIPT = "import torch\nmodel = Net().cuda()\nx = torch.zeros(3, device='cuda:0')\n"
CLEAN_SCRIPT = "import torch\nx = torch.zeros(3, device=device)\n"


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def run_json(capsys, *args: str) -> tuple[int, list[dict]]:
    code = main([*args, "--output-format", "json"])
    return code, json.loads(capsys.readouterr().out)


# -- exit codes -------------------------------------------------------------------------------
def test_exit_zero_when_clean(chdir_tmp, capsys):
    write(chdir_tmp, "clean.py", CLEAN_SCRIPT)
    assert main(["check", "."]) == 0
    assert "All checks passed!" in capsys.readouterr().out


def test_exit_one_with_findings_and_bare_path_form(chdir_tmp, capsys):
    write(chdir_tmp, "train.py", CUDA_SCRIPT)
    assert main(["."]) == 1  # `cudalint PATH` is `cudalint check PATH`
    out = capsys.readouterr().out
    assert "train.py:2:15: CUD102 [*]" in out
    assert "Found 2 errors." in out
    assert "[*] 2 fixable with the `--fix` option." in out


def test_exit_zero_flag(chdir_tmp):
    write(chdir_tmp, "train.py", CUDA_SCRIPT)
    assert main(["check", "--exit-zero", "."]) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "missing_dir"], "missing_dir: no such file or directory"),
        (["check", "--select", "CUD9", "."], "unknown rule selector 'CUD9'"),
        (["check", "--ignore", "E501", "."], "unknown rule selector 'E501'"),
        (["check", "--output-format", "xml", "."], "invalid choice: 'xml'"),
        (["check", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    ],
)
def test_usage_errors_exit_two_with_one_line(chdir_tmp, capsys, args, message):
    write(chdir_tmp, "clean.py", CLEAN_SCRIPT)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


USAGE_ERRORS = [
    (["mps-ops", "--op", "no_such_op"], "no op or call named 'no_such_op'"),
    (["mps-ops", "--target-torch", "banana"], "invalid torch version 'banana'"),
    (["mps-ops", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["rule", "CUD999"], "unknown rule code 'CUD999'"),
    (["rule"], "give a code (CUD101) or --all"),
    (["rule", "--output-format", "xml", "--all"], "invalid choice: 'xml'"),
    (["init-helper"], "the following arguments are required: path"),
    (["init-helper", "clean.py"], "clean.py exists; pass --force"),
    (["report", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["report", "missing_dir"], "missing_dir: no such file or directory"),
    (["report", "--smoke", "missing.json"], "missing.json: not a smoke report"),
    (["report", "--output-format", "xml"], "invalid choice: 'xml'"),
    (["smoke"], "the following arguments are required: TARGET"),
    (["smoke", "--no-such-flag", "clean.py:f"], "unrecognized arguments: --no-such-flag"),
    (["smoke", "clean.py:f", "--timeout", "-1"], "argument --timeout: must be more than 0"),
    (["lsp", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["lsp", "--debounce-ms", "-5"], "not a number of milliseconds: '-5'"),
    (["check", "-j", "0", "."], "argument -j/--jobs: must be 1 or more, not 0"),
    (["check", "--jobs=-1", "."], "argument -j/--jobs: must be 1 or more, not -1"),
    (["check", "-j", "many", "."], "argument -j/--jobs: invalid int value: 'many'"),
]


@pytest.mark.parametrize(("args", "message"),
                         [pytest.param(args, message, id=" ".join(args))
                          for args, message in USAGE_ERRORS])
def test_every_subcommand_exits_two_on_a_usage_error(chdir_tmp, capsys, args, message):
    """An unknown op, code or rule, a missing file or a bad value: exit 2 and one line on
    standard error, whichever subcommand parses the arguments."""
    write(chdir_tmp, "clean.py", CLEAN_SCRIPT)
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert message in err and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err and "usage:" not in err


@pytest.mark.parametrize(
    ("pyproject", "message"),
    [
        ("[tool.cudalint]\nselect = [\"CUD1\"\n", "invalid TOML"),
        ("[tool.cudalint]\nselct = [\"CUD1\"]\n", "unknown key in [tool.cudalint]: 'selct'"),
        ("[tool.cudalint]\nselect = [\"CUD999\"]\n", "unknown rule selector 'CUD999'"),
        ("[tool.cudalint]\nselect = \"CUD1\"\n", "select must be a list"),
        ("[tool.cudalint]\ntarget-torch = \"latest\"\n", "not a version"),
    ],
)
def test_broken_configuration_exits_two(chdir_tmp, capsys, pyproject, message):
    write(chdir_tmp, "pyproject.toml", pyproject)
    write(chdir_tmp, "train.py", CUDA_SCRIPT)
    assert main(["check", "."]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


# -- configuration ----------------------------------------------------------------------------
def test_config_select_ignore_and_per_file_ignores(chdir_tmp, capsys):
    write(chdir_tmp, "pyproject.toml",
          '[tool.cudalint]\nselect = ["CUD1"]\nignore = ["CUD102"]\n'
          '[tool.cudalint.per-file-ignores]\n"legacy/*" = ["CUD101"]\n')
    write(chdir_tmp, "train.py", CUDA_SCRIPT)
    write(chdir_tmp, "legacy/old.py", CUDA_SCRIPT)
    code, found = run_json(capsys, "check", ".")
    assert code == 1
    assert [(Path(f["filename"]).name, f["code"]) for f in found] == [("train.py", "CUD101")]


def test_cli_select_overrides_config(chdir_tmp, capsys):
    write(chdir_tmp, "pyproject.toml", '[tool.cudalint]\nselect = ["CUD101"]\n')
    write(chdir_tmp, "train.py", CUDA_SCRIPT)
    _, found = run_json(capsys, "check", "--select", "CUD10", ".")
    assert sorted(f["code"] for f in found) == ["CUD101", "CUD102"]
    _, found = run_json(capsys, "check", "--select", "CUD1", "--ignore", "CUD101", ".")
    assert [f["code"] for f in found] == ["CUD102"]



def test_cli_extend_select_overrides_a_config_ignore(chdir_tmp, capsys):
    """As ruff: the command line comes after the configuration, so its extend-select enables
    what the configuration ignores, and its ignore disables what the configuration selects."""
    write(chdir_tmp, "pyproject.toml",
          '[tool.cudalint]\nselect = ["CUD10"]\nignore = ["CUD102"]\n')
    write(chdir_tmp, "train.py", CUDA_SCRIPT)
    _, found = run_json(capsys, "check", ".")
    assert [f["code"] for f in found] == ["CUD101"]
    _, found = run_json(capsys, "check", "--extend-select", "CUD102", ".")
    assert sorted(f["code"] for f in found) == ["CUD101", "CUD102"]
    _, found = run_json(capsys, "check", "--ignore", "CUD1", "--extend-select", "CUD102", ".")
    assert [f["code"] for f in found] == ["CUD102"]  # the longer prefix wins within a source
    _, found = run_json(capsys, "check", "--ignore", "CUD101", ".")
    assert found == []  # the configuration's ignore still holds beside the command line's


def test_a_cli_select_drops_the_config_ignore(chdir_tmp, capsys):
    write(chdir_tmp, "pyproject.toml", '[tool.cudalint]\nignore = ["CUD102"]\n'
                                       'extend-select = ["CUD101"]\n')
    write(chdir_tmp, "train.py", CUDA_SCRIPT)
    _, found = run_json(capsys, "check", "--select", "CUD102", ".")
    assert [f["code"] for f in found] == ["CUD102"]
    _, found = run_json(capsys, "check", "--select", "CUD102", "--ignore", "CUD102", ".")
    assert found == []  # a tie within a source: ignore wins

def test_excludes_and_gitignore(chdir_tmp, capsys):
    write(chdir_tmp, "pyproject.toml", '[tool.cudalint]\nextend-exclude = ["generated/"]\n')
    write(chdir_tmp, ".gitignore", "scratch_*.py\n")
    write(chdir_tmp, "generated/a.py", CUDA_SCRIPT)
    write(chdir_tmp, "scratch_1.py", CUDA_SCRIPT)
    write(chdir_tmp, ".venv/lib/site.py", CUDA_SCRIPT)
    write(chdir_tmp, "pkg/train.py", CUDA_SCRIPT)
    _, found = run_json(capsys, "check", ".")
    assert {Path(f["filename"]).relative_to(chdir_tmp).as_posix() for f in found} == {
        "pkg/train.py"
    }



def test_build_output_is_excluded_by_default_as_in_ruff(chdir_tmp, capsys):
    """setuptools copies the package into build/lib: reporting it would count every finding
    twice and --fix would edit the copy."""
    for folder in ("build/lib/pkg", ".pytest_cache", ".vscode", "pkg"):
        write(chdir_tmp, f"{folder}/train.py", CUDA_SCRIPT)
    write(chdir_tmp, "builder/train.py", CUDA_SCRIPT)  # only the folder named build
    _, found = run_json(capsys, "check", ".")
    assert {Path(f["filename"]).relative_to(chdir_tmp).parent.as_posix() for f in found} == {
        "pkg", "builder"
    }
    _, found = run_json(capsys, "check", "build/lib/pkg/train.py")  # named: still checked
    assert found

# -- noqa -------------------------------------------------------------------------------------
def test_noqa_suppresses_named_codes_only(chdir_tmp, capsys):
    write(chdir_tmp, "train.py",
          "model = Net().cuda()  # noqa: CUD102\n"
          "x = y.to('cuda:0').cuda()  # noqa: CUD101\n"
          "z = w.to('cuda:1').cuda()  # noqa\n"
          "print('# noqa is prose here'); v = u.cuda()\n")
    _, found = run_json(capsys, "check", ".")
    assert [(f["code"], f["location"]["row"]) for f in found] == [("CUD102", 2), ("CUD102", 4)]


def test_noqa_is_respected_by_fix(chdir_tmp):
    path = write(chdir_tmp, "train.py", "a = m.cuda()  # noqa: CUD102\nb = n.cuda()\n")
    main(["check", "--fix", "."])
    assert path.read_text() == (
        "from _device import pick_device\n\n"
        "a = m.cuda()  # noqa: CUD102\nb = n.to(pick_device())\n"
    )


# -- bad input --------------------------------------------------------------------------------
def test_unparsable_and_undecodable_files_are_reported_and_others_checked(chdir_tmp, capsys):
    write(chdir_tmp, "a_broken.py", "def f(:\n    return x.cuda()\n")
    write(chdir_tmp, "b_latin.py", b"x = '\xe9t\xe9'\nm.cuda()\n")
    os.symlink(chdir_tmp / "nowhere.py", chdir_tmp / "c_dangling.py")
    write(chdir_tmp, "d_train.py", CUDA_SCRIPT)
    code, found = run_json(capsys, "check", ".")
    assert code == 1
    by_file = {Path(f["filename"]).name: f for f in found if f["code"] is None}
    assert by_file["a_broken.py"]["message"].startswith("SyntaxError")
    assert by_file["a_broken.py"]["location"]["row"] in (1, 2)
    assert "decode" in by_file["b_latin.py"]["message"]
    assert "cannot read" in by_file["c_dangling.py"]["message"]
    assert sorted(f["code"] for f in found if f["code"]) == ["CUD101", "CUD102"]


def test_unparsable_file_in_text_output(chdir_tmp, capsys):
    write(chdir_tmp, "broken.py", "x = torch.device('cuda'\n")
    assert main(["check", "broken.py"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("broken.py:")
    assert "SyntaxError" in out and "Traceback" not in out


def test_file_without_keywords_is_not_parsed(chdir_tmp, capsys):
    """The pre-filter skips a file no enabled rule could report on, broken or not: cudalint
    is not a syntax checker."""
    write(chdir_tmp, "notes.py", "this is not python, and it says nothing of GPUs\n")
    assert main(["check", "."]) == 0


# -- output formats ---------------------------------------------------------------------------
def test_json_contract(chdir_tmp, capsys):
    write(chdir_tmp, "train.py", CUDA_SCRIPT)
    _, found = run_json(capsys, "check", ".")
    first = found[0]
    assert set(first) >= {"code", "message", "filename", "location", "end_location", "fix",
                          "severity", "guarded", "url", "cell"}
    assert first["code"] == "CUD102"
    assert first["location"] == {"row": 2, "column": 15}
    assert first["end_location"] == {"row": 2, "column": 19}
    assert Path(first["filename"]).is_absolute()
    assert first["severity"] == "error" and first["guarded"] is False
    assert first["fix"]["applicability"] == "safe"
    assert first["url"].endswith("/CUD102/")


def _apply_edits(text: str, edits: list[dict]) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: dict) -> int:
        return offsets[position["row"] - 1] + position["column"] - 1

    for edit in sorted(edits, key=lambda e: offset(e["location"]), reverse=True):
        start, end = offset(edit["location"]), offset(edit["end_location"])
        text = text[:start] + edit["content"] + text[end:]
    return text


def test_json_fix_edits_reproduce_the_fix(chdir_tmp, capsys):
    source = "import torch\n\n\ndef f(m):\n    return m.cuda()\n"
    path = write(chdir_tmp, "one.py", source)
    _, found = run_json(capsys, "check", ".")
    assert len(found) == 1
    patched = _apply_edits(source, found[0]["fix"]["edits"])
    main(["check", "--fix", "."])
    assert patched == path.read_text()


def test_concise_and_plain_when_piped(chdir_tmp, capsys):
    write(chdir_tmp, "train.py", CUDA_SCRIPT)
    main(["check", "--output-format", "concise", "."])
    out = capsys.readouterr().out
    assert out.splitlines()[:2] == [
        "train.py:2:15: CUD102 [*] `.cuda()` only works on an NVIDIA GPU",
        "train.py:3:27: CUD101 [*] Hard-coded CUDA device 'cuda:0'",
    ]
    main(["check", "."])
    full = capsys.readouterr().out
    assert "\x1b[" not in full  # no colour codes when piped
    assert "2 | model = Net().cuda()" in full
    assert "  |               ^^^^ CUD102" in full


def test_github_format(chdir_tmp, capsys):
    write(chdir_tmp, "train.py", CUDA_SCRIPT)
    main(["check", "--output-format", "github", "."])
    first = capsys.readouterr().out.splitlines()[0]
    assert first == (
        "::error title=cudalint (CUD102),file=train.py,line=2,col=15,endLine=2,endColumn=19::"
        "train.py:2:15: CUD102 `.cuda()` only works on an NVIDIA GPU"
    )


def test_sarif_format(chdir_tmp, capsys):
    write(chdir_tmp, "train.py", CUDA_SCRIPT)
    main(["check", "--output-format", "sarif", "."])
    document = json.loads(capsys.readouterr().out)
    run = document["runs"][0]
    assert document["version"] == "2.1.0"
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} >= {"CUD101", "CUD102"}
    result = run["results"][0]
    assert result["ruleId"] == "CUD102" and result["level"] == "error"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (2, 15)


def test_statistics(chdir_tmp, capsys):
    write(chdir_tmp, "train.py", CUDA_SCRIPT + "y = z.cuda()\n")
    main(["check", "--statistics", "."])
    assert capsys.readouterr().out.splitlines() == [
        "2\tCUD102\t[*] cuda-method-call",
        "1\tCUD101\t[*] hardcoded-cuda-device",
    ]


def test_rule_command(capsys):
    assert main(["rule", "CUD102"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("# CUD102 (cuda-method-call)")
    assert "## Why is this bad?" in page
    assert main(["rule", "CUD999"]) == 2


# -- the linter never needs torch ---------------------------------------------------------------
def test_linting_does_not_import_torch(tmp_path):
    write(tmp_path, "train.py", CUDA_SCRIPT)
    code = (
        "import sys\nfrom cudalint.cli import main\n"
        f"main(['check', '--fix', {str(tmp_path)!r}])\n"
        "assert 'torch' not in sys.modules, 'the linter imported torch'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# -- files named explicitly (pre-commit passes every changed file) ------------------------------
def test_explicit_files_of_unknown_kind_are_skipped(chdir_tmp, capsys):
    write(chdir_tmp, "README.md", "Run `model.cuda()` first.\n")
    write(chdir_tmp, "config.yaml", "device: cuda\n")
    write(chdir_tmp, "bin/train", "#!/usr/bin/env python3\nmodel = Net().cuda()\n")
    code, found = run_json(capsys, "check", "README.md", "config.yaml", "bin/train")
    assert code == 1
    assert [(Path(f["filename"]).name, f["code"]) for f in found] == [("train", "CUD102")]


def test_force_exclude_applies_to_explicit_files(chdir_tmp, capsys):
    write(chdir_tmp, "pyproject.toml", '[tool.cudalint]\nextend-exclude = ["vendor/"]\n')
    write(chdir_tmp, "vendor/lib.py", CUDA_SCRIPT)
    assert main(["check", "vendor/lib.py"]) == 1
    assert main(["check", "--force-exclude", "vendor/lib.py"]) == 0


def test_parallel_run_reports_what_a_serial_run_does(chdir_tmp, capsys):
    for index in range(40):
        write(chdir_tmp, f"pkg/m{index:02}.py", CUDA_SCRIPT if index % 3 else CLEAN_SCRIPT)
    serial_code, serial = run_json(capsys, "check", "--jobs", "1", ".")
    parallel_code, parallel = run_json(capsys, "check", "--jobs", "2", ".")
    assert serial_code == parallel_code == 1
    assert parallel == serial and len(serial) == 2 * 26


def test_usage_lists_every_command(capsys):
    from cudalint import cli

    assert main(["--help"]) == 0
    usage = capsys.readouterr().out
    for command in [*cli._DELEGATED, *cli._OWN]:
        assert f"cudalint {command}" in usage, command


def test_report_help_shows_the_default_format(capsys):
    assert main(["report", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "how to write the decision (default: text)" in help_text
    assert "--smoke RUN.json" in help_text

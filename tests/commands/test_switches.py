"""ruff's switches and honest messages, through `cudalint.cli.main`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cudalint.cli import main

TRAIN = (
    "import torch\n"
    "\n"
    "model = Net().cuda()\n"
    'print("call .cuda() before training")\n'
    "state = torch.load(path)\n"
    "torch.cuda.manual_seed(0)\n"
)


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- --fix-only and --show-fixes --------------------------------------------------------------
def test_fix_only_fixes_prints_no_findings_and_exits_zero(chdir_tmp, capsys):
    path = _write(chdir_tmp, "train.py", TRAIN)
    code, out, _ = _run(capsys, "check", "--fix-only", ".")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Fixed 2 findings: 1 error, 1 warning."
    assert lines[1].startswith("Wrote the device helper _device.py") and len(lines) == 2
    fixed = path.read_text()
    assert "Net().to(pick_device())" in fixed and "manual_seed(0)\n" in fixed
    assert "torch.load(path)" in fixed  # CUD111's fix is unsafe
    code, out, _ = _run(capsys, "check", "--fix-only", ".")
    assert (code, out) == (0, "")  # nothing left to fix: nothing to say
    assert _run(capsys, "check", ".")[0] == 1  # CUD111 is still there


def test_show_fixes_lists_what_fix_changed(chdir_tmp, capsys):
    _write(chdir_tmp, "a.py", TRAIN)
    _write(chdir_tmp, "b.py", "x = y.cuda()\nz = w.cuda()\n")
    code, out, _ = _run(capsys, "check", "--fix", "--show-fixes", "--output-format", "concise",
                        ".")
    assert code == 1
    lines = out.splitlines()
    start = lines.index("Fixed 4 findings: 3 errors, 1 warning:")
    assert lines[start + 1:start + 6] == [
        "- a.py:",
        "    1 \u00d7 CUD102 (cuda-method-call)",
        "    1 \u00d7 CUD105 (cuda-call-with-portable-helper)",
        "- b.py:",
        "    2 \u00d7 CUD102 (cuda-method-call)",
    ]
    assert "Found 5 findings: 3 errors, 2 warnings (4 fixed, 1 remaining)." in lines


# -- --quiet: the findings and nothing else (as ruff) ------------------------------------------
SMALL = "import torch\nmodel = Net().cuda()\nstate = torch.load(path)\n"
CUD102 = "train.py:2:15: CUD102 [*] `.cuda()` only works on an NVIDIA GPU"
CUD111 = "CUD111 `torch.load` without `map_location` fails on a checkpoint saved on CUDA"
WROTE = ("Wrote the device helper _device.py, which the fixed files import (standalone: needs "
         "only torch): train.py. To import another module instead, set `helper = "
         '"<module>"` in [tool.cudalint], e.g. `helper = "cudalint.device"` to depend on '
         "cudalint.")


QUIET_AND_FIX_ONLY = {
    "--quiet": [CUD102, f"train.py:3:9: {CUD111}"],
    "--quiet --fix": [f"train.py:5:9: {CUD111}"],  # no "Found", no "Wrote"
    "--quiet --fix --show-fixes": [f"train.py:5:9: {CUD111}"],
    "--fix-only": ["Fixed 1 error.", WROTE],
    "--fix-only --quiet": [],
    "--fix-only --show-fixes":  # "Fixed 1 error" once, heading the list
        ["Fixed 1 error:", "- train.py:", "    1 \u00d7 CUD102 (cuda-method-call)", WROTE],
}


@pytest.mark.parametrize("switches", QUIET_AND_FIX_ONLY)
def test_quiet_prints_findings_only_and_fix_only_one_line(chdir_tmp, capsys, switches):
    _write(chdir_tmp, "train.py", SMALL)
    args, shown = switches.split(), QUIET_AND_FIX_ONLY[switches]
    code, out, err = _run(capsys, "check", "--output-format", "concise", *args, ".")
    assert (out.splitlines(), err) == (shown, "")
    assert code == (0 if "--fix-only" in args else 1)


# -- --show-files and --show-settings ------------------------------------------------------------
def test_show_files_lists_what_a_run_reads(chdir_tmp, capsys):
    _write(chdir_tmp, "pyproject.toml", '[tool.cudalint]\nextend-exclude = ["vendor/"]\n')
    _write(chdir_tmp, "train.py", TRAIN)
    _write(chdir_tmp, "vendor/lib.py", TRAIN)
    _write(chdir_tmp, "scripts/run.slurm", "#SBATCH --gres=gpu:1\n")
    _write(chdir_tmp, "notes.md", "nothing\n")
    code, out, _ = _run(capsys, "check", "--show-files", ".")
    assert code == 0
    assert out.splitlines() == ["pyproject.toml\tpyproject", "scripts/run.slurm\tshell",
                                "train.py\tpython"]
    assert (chdir_tmp / "train.py").read_text() == TRAIN


def test_show_settings_prints_the_resolved_settings(chdir_tmp, capsys):
    _write(chdir_tmp, "pyproject.toml",
           '[tool.cudalint]\nignore = ["CUD6"]\nhelper = "pkg.device"\n'
           '[tool.cudalint.per-file-ignores]\n"tests/*" = ["CUD1"]\n')
    _write(chdir_tmp, "tests/test_train.py", TRAIN)
    code, out, _ = _run(capsys, "check", "--show-settings", "--ignore", "CUD7",
                        "tests/test_train.py")
    assert code == 0
    settings = dict(line.split(" = ", 1) for line in out.splitlines() if " = " in line)
    assert out.splitlines()[0] == "Resolved settings for: tests/test_train.py"
    assert f"Settings path: {chdir_tmp / 'pyproject.toml'}" in out
    assert settings["helper"] == '"pkg.device"' and settings["kind"] == '"python"'
    assert json.loads(settings["ignore"]) == ["CUD6"]
    enabled = json.loads(settings["enabled rules"])
    assert "CUD201" in enabled  # as ruff: --ignore adds to the configuration's
    assert not any(code.startswith(("CUD1", "CUD6", "CUD7")) for code in enabled)
    assert [line.split(" = ", 1)[0] for line in out.splitlines() if " = " in line] == [
        "kind", "select", "ignore", "extend-select", "per-file-ignores", "exclude",
        "extend-exclude", "exclude-kinds", "helper", "target-torch", "known-first-party",
        "respect-gitignore", "max-file-size", "max-memory", "fail-on",
        "command-line ignore", "enabled rules"]
    assert settings["target-torch"] == '"2.6"  # default (the project states no torch floor)'
    assert settings["fail-on"] == '"warning"'


# Projects stating (or not) the torch their fixes target, and what --show-settings says of it.
TORCH_SOURCES = {
    "default": ({}, '"2.6"  # default (the project states no torch floor)'),
    "requirements": ({"requirements.txt": "numpy\ntorch>=1.8\n"}, '"1.8"  # requirements.txt'),
    "lowest-of-files": ({"requirements/dev.txt": "torch>=1.9\n",
                         "requirements.txt": "torch>=1.8.1\n",
                         "environment.yml": "dependencies:\n  - pytorch=1.10\n"},
                        '"1.8"  # requirements.txt'),
    "lowest-in-a-folder": ({"requirements.txt": "torch>=1.9\n",
                            "requirements/dev.txt": "torch~=1.8.0\n"},
                           '"1.8"  # requirements/dev.txt'),
    "environment": ({"environment.yml": "dependencies:\n  - pip:\n    - torch==1.12.1\n"},
                    '"1.12"  # environment.yml'),
    "pyproject": ({"pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch>=2.1"]\n'},
                  '"2.1"  # pyproject.toml'),
    "setup-py": ({"setup.py": 'from setuptools import setup\n'
                              'setup(install_requires=["torch>=1.11"])\n'}, '"1.11"  # setup.py'),
    "setting": ({"pyproject.toml": '[tool.cudalint]\ntarget-torch = "2.8"\n',
                 "requirements.txt": "torch>=1.8\n"}, '"2.8"  # [tool.cudalint]'),
    "readme": ({"README.md": "Needs PyTorch 1.7 or later.\n"},
               '"1.7"  # README.md (lowers the default)'),
    "readme-newer": ({"README.md": "Tested with PyTorch 2.9.\n"},
                     '"2.6"  # default (the project states no torch floor)'),
    "torch-six": ({"util.py": "from torch._six import inf\n"}, '"1.13"  # torch._six in the code'),
    "torch-six-and-readme": ({"util.py": "from torch._six import inf\n",
                              "README.md": "PyTorch 1.7\n"},
                             '"1.7"  # README.md (lowers the default)'),
    "torch-six-and-requirements": ({"util.py": "from torch._six import inf\n",
                                    "requirements.txt": "torch>=2.0\n"},
                                   '"2.0"  # requirements.txt'),
}


@pytest.mark.parametrize(("files", "shown"), list(TORCH_SOURCES.values()), ids=list(TORCH_SOURCES))
def test_show_settings_gives_the_target_torch_and_its_source(chdir_tmp, capsys, files, shown):
    from cudalint.config import load_config
    from cudalint.engine.project import facts
    from cudalint.engine.running.discovery import discover

    _write(chdir_tmp, "train.py", TRAIN)
    for name, text in files.items():
        _write(chdir_tmp, name, text)
    code, out, _ = _run(capsys, "check", "--show-settings", ".")
    assert code == 0
    settings = dict(line.split(" = ", 1) for line in out.splitlines() if " = " in line)
    assert settings["target-torch"] == shown
    # what the run itself targets (runner.run: the settings, then the tree scan)
    config = load_config(chdir_tmp)
    tree = facts.scan_tree(discover([Path(".")], config), config.max_file_size)
    major, minor = facts.with_tree(facts.settings_for(config), tree).target_torch
    assert shown.startswith(f'"{major}.{minor}"  # ')


def test_show_settings_on_standard_input_reads_the_named_files_project(chdir_tmp, capsys,
                                                                       monkeypatch):
    """A buffer named with --stdin-filename gets its project's facts, as a check of the file
    does (issue 40): `torch._six` in another module lowers its torch; a buffer without a name
    has no project."""
    import io
    import sys

    _write(chdir_tmp, "util.py", "from torch._six import inf\n")
    _write(chdir_tmp, "train.py", TRAIN)
    for given in (["-"], []):  # the buffer is named train.py, with or without `-`
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(TRAIN.encode())))
        code, out, _ = _run(capsys, "check", "--show-settings", "--stdin-filename", "train.py",
                            *given)
        assert code == 0
        assert 'target-torch = "1.13"  # torch._six in the code' in out
    code, out, _ = _run(capsys, "check", "--show-settings", "train.py")
    assert 'target-torch = "1.13"  # torch._six in the code' in out
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(TRAIN.encode())))
    code, out, _ = _run(capsys, "check", "--show-settings", "-")
    assert 'target-torch = "2.6"  # default (standard input has no project)' in out


def test_show_settings_gives_fail_on_from_the_config_or_the_flag(chdir_tmp, capsys):
    _write(chdir_tmp, "pyproject.toml", '[tool.cudalint]\nfail-on = "info"\n')
    _write(chdir_tmp, "train.py", TRAIN)
    assert 'fail-on = "info"' in _run(capsys, "check", "--show-settings", "train.py")[1]
    out = _run(capsys, "check", "--show-settings", "--fail-on", "error", "train.py")[1]
    assert 'fail-on = "error"' in out.splitlines()


# -- --help everywhere, with defaults -----------------------------------------------------------
@pytest.mark.parametrize("command", ["check", "rule", "init-helper", "mps-ops", "smoke", "lsp",
                                     "report"])
def test_every_subcommand_has_help(capsys, command):
    code, out, err = _run(capsys, command, "--help")
    assert (code, err) == (0, "")
    assert out.startswith(f"usage: cudalint {command}")


def test_help_shows_defaults(capsys):
    _, out, _ = _run(capsys, "check", "--help")
    flat = " ".join(out.split())
    assert "how to print findings (default: full)" in flat
    assert "(default: one per core" in flat
    assert "(default: None)" not in flat and "(default: False)" not in flat
    _, out, _ = _run(capsys, "rule", "--help")
    assert "(default: text)" in " ".join(out.split())


def test_rule_errors_are_one_line(capsys):
    for args in (["rule"], ["rule", "CUD999"], ["rule", "CUD101", "--all"],
                 ["rule", "--output-format", "xml", "--all"]):
        code, out, err = _run(capsys, *args)
        assert (code, out) == (2, "")
        assert err.count("\n") == 1 and err.startswith("cudalint: error:")


def test_rule_json_for_one_code(capsys):
    code, out, _ = _run(capsys, "rule", "CUD111", "--output-format", "json")
    rule = json.loads(out)
    assert code == 0
    assert (rule["code"], rule["name"], rule["fix"]) == ("CUD111", "load-without-map-location",
                                                         "unsafe")
    assert rule["explanation"].startswith("## What it does")


# -- --force-exclude without a configuration ---------------------------------------------------
@pytest.mark.parametrize("marker", ["pyproject.toml", ".git"])
def test_force_exclude_uses_default_excludes_without_configuration(chdir_tmp, capsys, marker):
    if marker == ".git":
        (chdir_tmp / ".git").mkdir()
    else:
        _write(chdir_tmp, marker, "[project]\nname = 'demo'\n")
    _write(chdir_tmp, "dist/gen.py", TRAIN)
    _write(chdir_tmp, "src/train.py", TRAIN)
    nested = chdir_tmp / "src"
    for cwd in (chdir_tmp, nested):  # from the root and from below it (a pre-commit hook)
        shown = Path("..") / "dist" / "gen.py" if cwd == nested else Path("dist/gen.py")
        assert _run_in(capsys, cwd, "check", "--force-exclude", str(shown))[0] == 0
        assert _run_in(capsys, cwd, "check", str(shown))[0] == 1  # named without the flag
    assert _run_in(capsys, chdir_tmp, "check", "--force-exclude", "src/train.py",
                   "dist/gen.py")[0] == 1


def _run_in(capsys, cwd: Path, *args: str) -> tuple[int, str, str]:
    previous = Path.cwd()
    try:
        os.chdir(cwd)
        return _run(capsys, *args)
    finally:
        os.chdir(previous)


# -- init-helper's module path -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("layout", "target", "module"),
    [
        ("ih/pyproject.toml", "ih/src/pkg/device.py", "pkg.device"),
        ("ih/pyproject.toml", "ih/pkg/utils/device.py", "pkg.utils.device"),
        ("ih/.git/HEAD", "ih/train_device.py", "train_device"),
        ("ih/pyproject.toml", "ih/src/device.py", "device"),
    ],
)
def test_init_helper_module_is_relative_to_the_project_root(chdir_tmp, capsys, layout, target,
                                                            module):
    _write(chdir_tmp, layout, "[project]\nname = 'ih'\n")
    code, out, _ = _run(capsys, "init-helper", target)
    assert code == 0
    assert out.endswith(f'helper = "{module}"\n')
    assert (chdir_tmp / target).is_file()


def test_init_helper_from_inside_the_project(chdir_tmp, capsys, monkeypatch):
    _write(chdir_tmp, "ih/pyproject.toml", "[project]\nname = 'ih'\n")
    (chdir_tmp / "ih" / "src").mkdir()
    monkeypatch.chdir(chdir_tmp / "ih" / "src")
    code, out, _ = _run(capsys, "init-helper", "pkg/device.py")
    assert code == 0 and out.endswith('helper = "pkg.device"\n')


# -- mps-ops without a table for the asked version ------------------------------------------------
def test_mps_ops_says_which_table_it_uses(capsys):
    code, out, err = _run(capsys, "mps-ops", "--target-torch", "2.3")
    assert code == 0 and err == ""
    assert out.splitlines()[0] == (
        "no table for torch 2.3: the oldest shipped one, torch 2.13.0, is shown")
    code, out, err = _run(capsys, "mps-ops", "--target-torch", "2.3", "--json")
    assert json.loads(out)["exact"] is False and json.loads(out)["torch"] == "2.13.0"
    assert err == ("cudalint mps-ops: no table for torch 2.3: the oldest shipped one, "
                   "torch 2.13.0, is shown\n")


def test_force_exclude_without_any_project_marker_uses_the_current_folder(chdir_tmp, capsys):
    _write(chdir_tmp, "dist/lib/gen.py", TRAIN)
    assert _run(capsys, "check", "--force-exclude", "dist/lib/gen.py")[0] == 0
    assert _run(capsys, "check", "dist/lib/gen.py")[0] == 1

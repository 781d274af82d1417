"""The lint cache: a second run prints exactly what a fresh check prints, for every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.engine.cache import FOLDER

_TRAIN = """\
import torch


def train(model, batches):
    model = model.cuda()
    for x, y in batches:
        loss = model(x.cuda()).sum()  # noqa: CUD102
        print("moving to cuda")
    torch.cuda.synchronize()
    return torch.load("ckpt.pt")
"""
_FILES = {
    "train.py": _TRAIN,
    "clean.py": "import os\n\n\ndef f():\n    return os.getcwd()\n",
    "broken.py": "def f(:\n    return x.cuda()\n",
    "requirements.txt": "torch==2.3.0+cu121\nnumpy\n",
    "pkg/helpers.py": "import torch\nDEVICE = 'cuda:0'\nx = torch.ones(2, device=DEVICE)\n",
}


@pytest.fixture
def project(chdir_tmp: Path) -> Path:
    for name, text in _FILES.items():
        (chdir_tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (chdir_tmp / name).write_text(text, encoding="utf-8")
    return chdir_tmp


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["check", ".", *args])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("output", [
    ["--output-format", "full"], ["--output-format", "concise"], ["--output-format", "json"],
    ["--output-format", "github"], ["--output-format", "sarif"], ["--statistics"],
])
def test_a_cached_run_prints_what_a_fresh_one_does(project, capsys, output):
    fresh = _check(capsys, "--no-cache", *output)
    assert not (project / FOLDER).exists()
    first = _check(capsys, *output)
    assert (project / FOLDER).is_dir()
    second = _check(capsys, *output)
    assert fresh[0] == 1 and "CUD" in fresh[1]
    assert first == fresh
    assert second == fresh


def test_the_cache_folder_is_tagged_and_ignored(project, capsys):
    _check(capsys)
    folder = project / FOLDER
    assert (folder / "CACHEDIR.TAG").read_text().startswith(
        "Signature: 8a477f597d28d172789f06886806bc55")
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"


def test_entries_are_replayed_not_recomputed(project, capsys, monkeypatch):
    _check(capsys, "--output-format", "json")
    from cudalint.engine import runner

    def no_check(*args, **kwargs):
        raise AssertionError("checked again")

    monkeypatch.setattr(runner, "check_python", no_check)
    monkeypatch.setattr(runner, "check_other", no_check)
    code, out = _check(capsys, "--output-format", "json")
    assert code == 1 and json.loads(out)


def test_an_edited_file_is_checked_again(project, capsys):
    _check(capsys, "--output-format", "concise")
    (project / "clean.py").write_text("import torch\nm = torch.nn.Linear(2, 2).cuda()\n")
    _code, out = _check(capsys, "--output-format", "concise")
    assert "clean.py:2:" in out


def test_other_rules_or_settings_are_other_entries(project, capsys):
    _check(capsys, "--output-format", "concise")
    _code, selected = _check(capsys, "--output-format", "concise", "--select", "CUD111")
    assert "CUD111" in selected and "CUD102" not in selected
    (project / "pyproject.toml").write_text(
        '[tool.cudalint]\nper-file-ignores = {"train.py" = ["CUD111"]}\n')
    _code, ignored = _check(capsys, "--output-format", "concise", "--select", "CUD111")
    assert "train.py" not in ignored


def test_damaged_entries_are_misses(project, capsys):
    fresh = _check(capsys, "--output-format", "json")
    for entry in (project / FOLDER).glob("*/*.json"):
        entry.write_text("{not json")
    assert _check(capsys, "--output-format", "json") == fresh


def test_no_cache_from_the_environment(project, capsys, monkeypatch):
    monkeypatch.setenv("CUDALINT_NO_CACHE", "1")
    _check(capsys)
    assert not (project / FOLDER).exists()


def test_a_fix_run_fixes_a_file_whose_lint_is_cached(project, capsys):
    _check(capsys)
    code, _out = _check(capsys, "--fix")
    assert "pick_device" in (project / "pkg/helpers.py").read_text()
    assert code == 1  # what cannot be fixed remains


def test_a_new_target_torch_is_a_new_entry(project, capsys):
    """The target torch comes from the project's requirements: a new pin, new findings."""
    (project / "ops.py").write_text("import torch\n\n\ndef pad(x):\n"
                                    "    return torch.nn.functional.rrelu(x.cuda())\n")
    outputs = []
    for pin in ("torch==2.1.0\n", "torch>=2.7\n"):
        (project / "requirements.txt").write_text(pin)
        _check(capsys, "--output-format", "json")
        cached = _check(capsys, "--output-format", "json")
        assert cached == _check(capsys, "--output-format", "json", "--no-cache")
        outputs.append([f["message"] for f in json.loads(cached[1])
                        if f["filename"].endswith("ops.py")])
    assert outputs[0] != outputs[1]

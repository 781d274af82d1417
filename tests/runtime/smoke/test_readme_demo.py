"""The README's `cudalint smoke` commands, run exactly as written on a copy of the demo: from
inside the demo folder ("Using it") and from a checkout's root ("Two machines")."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import subprocess_env

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "fixtures" / "demo"
H200_REFERENCE = DEMO / "references" / "train_step_h200_cuda.safetensors"

# "Using it": run in the project's folder, as `cudalint check --fix train.py` is.
USING_IT = "cudalint smoke smoke_target.py:train_step"
# "Two machines": run from the checkout's root; the reference was saved on an NVIDIA H200.
ON_THE_MAC = ("cudalint smoke fixtures/demo/smoke_target.py:train_step "
              "--reference ref.safetensors")


def _cudalint(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    words = shlex.split(command.partition("#")[0])
    assert words[0] == "cudalint"
    executable = Path(sys.executable).with_name("cudalint")
    argv = [str(executable)] if executable.is_file() else [sys.executable, "-m", "cudalint"]
    return subprocess.run([*argv, *words[1:]], cwd=cwd, env=subprocess_env(),
                          capture_output=True, text=True, timeout=600, check=False)


def _copy_demo(folder: Path) -> Path:
    shutil.copytree(DEMO, folder, ignore=shutil.ignore_patterns("__pycache__", "*.pt"))
    return folder


def test_using_it_fails_before_the_fix_and_passes_after(tmp_path: Path) -> None:
    demo = _copy_demo(tmp_path / "demo")
    before = _cudalint(USING_IT, demo)
    assert before.returncode == 1, before.stderr[-2000:]
    assert "Torch not compiled with CUDA enabled" in before.stdout
    assert _cudalint("cudalint check --fix .", demo).returncode in (0, 1)
    after = _cudalint(USING_IT + " --json run.json", demo)
    assert after.returncode == 0, after.stdout + after.stderr[-2000:]
    assert "verdict: pass" in after.stdout
    report = json.loads((demo / "run.json").read_text())
    assert report["project"]["name"] == "demo-mlp"
    assert {"smoke_target.py", "model.py", "data.py"} <= set(report["files"])


def test_the_two_machine_comparison_runs_from_a_checkouts_root(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    _copy_demo(checkout / "fixtures" / "demo")
    shutil.copy(H200_REFERENCE, checkout / "ref.safetensors")
    assert _cudalint("cudalint check --fix fixtures/demo", checkout).returncode in (0, 1)
    done = _cudalint(ON_THE_MAC, checkout)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "match the reference (cuda (NVIDIA H200)" in done.stdout


@pytest.mark.parametrize("command", [USING_IT, ON_THE_MAC])
def test_the_readme_shows_these_commands(command: str) -> None:
    assert command in (ROOT / "README.md").read_text(encoding="utf-8"), (
        f"README.md does not show `{command}`, the command this file runs")

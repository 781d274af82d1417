"""`pip install 'cudalint[smoke]'` into a project's own environment keeps the torch that is
already there (the extra is a range, never a pin), and `cudalint smoke` then runs the demo with
it. An install test: a fresh virtual environment, torch first, then this working tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]  # the working tree that is installed
DEMO = ROOT / "fixtures" / "demo"
# The project's torch. Only this release is on this machine's disk as a CPU build: PyPI's x86_64
# wheels of other releases are CUDA builds of several GB (torch 2.9.1: 900 MB, and as much
# again in nvidia-* packages; 2.14.1, the newest the local index serves, is 555 MB and needs
# cuda-toolkit 13 and nvidia-*-cu13; download.pytorch.org's CPU index is not reachable from
# here), so the environment is fresh but its torch is this one.
PROJECT_TORCH = torch.__version__.split("+")[0]


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                          check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done


@pytest.mark.install
def test_smoke_extra_keeps_the_projects_torch(tmp_path: Path) -> None:
    started = time.monotonic()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bin_ = venv / "bin"
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "CUDALINT_DEVICE", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join([str(bin_), env.get("PATH", "")])
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_PROGRESS_BAR="off")
    pip = [str(bin_ / "python"), "-m", "pip"]
    _run([*pip, "install", f"torch=={PROJECT_TORCH}"], tmp_path, env)
    python = [str(bin_ / "python"), "-c"]
    show = ("import torch, pathlib; "
            "print(torch.__version__, pathlib.Path(torch.__file__).stat().st_mtime_ns)")
    torch_before = _run([*python, show], tmp_path, env).stdout.strip()

    install = _run([*pip, "install", f"{ROOT}[smoke]"], tmp_path, env)
    log = install.stdout + install.stderr
    assert "Requirement already satisfied: torch>=2.0" in log, log[-3000:]
    assert "torch-" not in log.replace("torch->", ""), f"a second torch was fetched:\n{log}"
    assert _run([*python, show], tmp_path, env).stdout.strip() == torch_before

    demo = tmp_path / "demo"
    shutil.copytree(DEMO, demo, ignore=shutil.ignore_patterns("__pycache__", "*.pt"))
    cudalint = str(bin_ / "cudalint")
    done = subprocess.run([cudalint, "check", "--fix", "."], cwd=demo, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    # The README's command ("Using it"), with the report written for the checks below.
    _run([cudalint, "smoke", "smoke_target.py:train_step", "--json", "run.json"], demo, env)
    report = json.loads((demo / "run.json").read_text())
    assert report["verdict"] == "pass"
    assert report["environment"]["torch"] == torch_before.split()[0]
    assert report["packages"]["torch"] == torch_before.split()[0]
    assert "pytest" not in report["packages"], "it ran in the fresh environment"
    print(f"fresh venv, torch, cudalint[smoke] and the demo's smoke run: "
          f"{time.monotonic() - started:.0f} s")

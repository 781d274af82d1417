"""The bundled demo project: a CUDA-only training script that fails here, is fixed by
`cudalint --fix`, and then trains on this CPU-only machine."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from cudalint.cli import main


def _train(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("CUDALINT_DEVICE", None)
    return subprocess.run([sys.executable, "train.py", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


def _digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_demo_fails_before_fix_and_trains_after(demo, capsys):
    before = _train(demo, "--steps", "2")
    assert before.returncode != 0
    assert "Torch not compiled with CUDA enabled" in before.stderr

    main(["check", "--fix", str(demo)])
    out = capsys.readouterr().out
    assert "fixed" in out

    after = _train(demo, "--steps", "40", "--out", "metrics.json")
    assert after.returncode == 0, after.stderr[-2000:]
    metrics = json.loads((demo / "metrics.json").read_text())
    assert metrics["steps"] == 40
    assert metrics["final_loss"] < metrics["first_loss"]
    assert metrics["accuracy"] > 0.5  # ten well separated clusters: chance is 0.1

    # A second --fix changes nothing.
    snapshot = _digest(demo)
    main(["check", "--fix", str(demo)])
    assert _digest(demo) == snapshot



REFERENCE = (Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "references"
             / "train_step_h200_cuda.safetensors")


def test_fixed_demo_matches_the_reference_saved_on_a_cuda_server(demo, capsys):
    """The two-machine workflow with a real CUDA reference: `train_step` of the *original*
    demo, saved on an NVIDIA H200 (torch 2.11+cu130) with
    `cudalint smoke smoke_target.py:train_step --device cuda --save-reference ...`, compared
    with the *fixed* demo run here on the CPU."""
    main(["check", "--fix", str(demo)])
    capsys.readouterr()
    code = main(["smoke", f"{demo / 'smoke_target.py'}:train_step", "--device", "cpu",
                 "--reference", str(REFERENCE)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "match the reference (cuda (NVIDIA H200)" in out

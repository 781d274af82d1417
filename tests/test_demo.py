"""The bundled demo project: a CUDA-only training script that fails here, is fixed by
`cudalint --fix`, and then trains on this CPU-only machine."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from cudalint.cli import main
from tests.conftest import DEMO
from tests.warm_python import WarmPython

# `python train.py ARGS` in a process where `import cudalint` fails, as on the CUDA server
# where the fixed project is deployed without cudalint.
WITHOUT_CUDALINT = """
import runpy, sys
sys.modules["cudalint"] = None
try:
    import cudalint
except ImportError:
    pass
else:
    raise SystemExit("cudalint is importable")
sys.path.insert(0, ".")
sys.argv = ["train.py", *sys.argv[1:]]
runpy.run_path("train.py", run_name="__main__")
"""


def _train(warm: WarmPython, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python train.py ARGS`, forked from a process that imported torch once."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("CUDALINT_DEVICE", None)
    return warm.run(["-c", WITHOUT_CUDALINT, *args], cwd=folder, env=env)


def _digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_demo_fails_before_fix_and_trains_after(demo, capsys, warm_python):
    before = _train(warm_python, demo, "--steps", "2")
    assert before.returncode != 0
    assert "Torch not compiled with CUDA enabled" in before.stderr

    main(["check", "--fix", str(demo)])
    out = capsys.readouterr().out
    assert "fixed" in out
    # The fixes import the standalone helper written beside train.py, not cudalint.
    assert "Wrote the device helper" in out and (demo / "_device.py").is_file()
    assert "from _device import" in (demo / "train.py").read_text()
    assert "cudalint" not in (demo / "train.py").read_text()

    # 12 steps: the loss falls to a sixteenth and every point is classified (40: 2.5x the CPU)
    after = _train(warm_python, demo, "--steps", "12", "--out", "metrics.json")
    assert after.returncode == 0, after.stderr[-2000:]
    metrics = json.loads((demo / "metrics.json").read_text())
    assert metrics["steps"] == 12
    assert metrics["final_loss"] < metrics["first_loss"]
    assert metrics["accuracy"] > 0.5  # ten well separated clusters: chance is 0.1

    # A second --fix changes nothing.
    snapshot = _digest(demo)
    main(["check", "--fix", str(demo)])
    assert _digest(demo) == snapshot



def _findings(folder: Path, capsys) -> list[tuple[str, str, int, int]]:
    main(["check", "--no-cache", "--output-format", "json", str(folder)])
    return sorted((Path(f["filename"]).relative_to(folder).as_posix(), f["code"],
                   f["location"]["row"], f["location"]["column"])
                  for f in json.loads(capsys.readouterr().out))


def test_demo_findings_are_each_reported_once(demo, capsys):
    """What the demo project gives, file by file, code by code, with how many times (a
    finding reported twice shows as a count, which a set of findings hides)."""
    found = _findings(demo, capsys)
    assert len(set(found)) == len(found), "a finding is reported twice"
    assert sorted(Counter((path, code) for path, code, _, _ in found).items()) == [
        (("environment.yml", "CUD401"), 2),
        (("model.py", "CUD101"), 1),
        (("requirements.txt", "CUD402"), 2),
        (("scripts/train.slurm", "CUD501"), 1),
        (("scripts/train.slurm", "CUD502"), 1),
        (("scripts/train.slurm", "CUD503"), 2),
        (("train.py", "CUD101"), 3),
        (("train.py", "CUD102"), 3),
        (("train.py", "CUD105"), 6),
        (("train.py", "CUD106"), 2),
        (("train.py", "CUD107"), 1),
        (("train.py", "CUD603"), 1),
    ]


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


def _ruff(folder: Path) -> Counter[tuple[str, str]]:
    """Each (file, code) ruff reports, with how many times: a second unused import in a file
    that had one is a new finding."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F401,E402",
         "--output-format", "json", "--exclude", "_device.py", "."],
        cwd=folder, capture_output=True, text=True, timeout=120)
    return Counter((Path(f["filename"]).name, f["code"]) for f in json.loads(result.stdout))


FIXTURE_PROJECTS = ("research_repo", "research_repo2", "report/dual_track", "report/ready",
                    "report/refused", *(f"layouts/{p.name}" for p in sorted(
                        (DEMO.parent / "layouts").iterdir()) if p.is_dir()))


def test_fixed_fixtures_have_no_new_unused_or_misplaced_imports(tmp_path, demo, capsys):
    """Every fixture project, function-local imports included (fixtures/layouts)."""
    copies = [demo]
    for name in FIXTURE_PROJECTS:
        copies.append(tmp_path / name)
        shutil.copytree(DEMO.parent / name, copies[-1])
    assert len(copies) > 8
    for folder in copies:
        before = _ruff(folder)
        main(["check", "--fix", "--unsafe-fixes", str(folder)])
        after = _ruff(folder)
        assert not after - before, after - before  # no (file, code) more often than before
    capsys.readouterr()


def test_the_demo_helper_holds_only_what_the_fixes_import_and_stays_put(demo, capsys):
    from cudalint.engine.checkers.job import imported_helpers
    from cudalint.runtime.helper import helper_module_text, known_helpers, module_names

    main(["check", "--fix", str(demo)])
    capsys.readouterr()
    imported = frozenset().union(*(imported_helpers(p.read_text(), "_device")
                                   for p in demo.rglob("*.py") if p.name != "_device.py"))
    helper = (demo / "_device.py").read_text()
    assert imported and module_names(helper) == imported
    assert helper == helper_module_text(imported)
    assert module_names(helper) < known_helpers()  # not the whole helper
    before = _digest(demo)
    main(["check", "--fix", str(demo)])
    capsys.readouterr()
    assert _digest(demo) == before  # a second --fix: byte-identical, helper included

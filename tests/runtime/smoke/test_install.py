"""`pip install 'cudalint[smoke]'` into a project's own environment keeps the torch that is
already there (the extra is a range, never a pin), and `cudalint smoke` then runs the demo with
it. An install test: a fresh virtual environment, torch first (this environment's, linked),
then this working tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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


def _link_the_projects_torch(venv: Path, folder: Path) -> None:
    """The environment's torch, and what it requires, installed in `venv` as links (a .pth
    naming a folder of links to this environment's files): pip sees torch installed, as in
    a project that has it, without unpacking a 700 MB wheel again (23 CPU-seconds here)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    folder.mkdir()
    pending, seen = ["torch"], set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        distribution = metadata.distribution(name)
        for top in {Path(str(file)).parts[0] for file in distribution.files or ()}:
            source = Path(str(distribution.locate_file(top)))
            if source.exists() and not (folder / top).exists() and top != "..":
                (folder / top).symlink_to(source)
        for text in distribution.requires or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name.lower().replace("_", "-"))
    [site] = venv.glob("lib/python*/site-packages")
    (site / "project_torch.pth").write_text(f"{folder}\n", encoding="utf-8")


@pytest.mark.install
def test_smoke_extra_keeps_the_projects_torch(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bin_ = venv / "bin"
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "CUDALINT_DEVICE", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join([str(bin_), env.get("PATH", "")])
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_PROGRESS_BAR="off")
    pip = [str(bin_ / "python"), "-m", "pip"]
    _link_the_projects_torch(venv, tmp_path / "project-torch")
    python = [str(bin_ / "python"), "-c"]
    show = ("import torch, pathlib; "
            "print(torch.__version__, pathlib.Path(torch.__file__).stat().st_mtime_ns)")
    torch_before = _run([*python, show], tmp_path, env).stdout.strip()
    assert torch_before.startswith(PROJECT_TORCH)  # the fresh environment's, through the .pth

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


def _metadata_only_torch(folder: Path, version: str) -> Path:
    """A wheel that installs as torch `version` (metadata and a module saying its version):
    what pip's resolver sees of a project's older torch, without a multi-GB build."""
    import base64
    import hashlib
    import zipfile

    files = {
        "torch/__init__.py": f'__version__ = "{version}"\n',
        f"torch-{version}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n",
        f"torch-{version}.dist-info/WHEEL":
            "Wheel-Version: 1.0\nGenerator: cudalint-tests\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"torch-{version}.dist-info/RECORD,,")
    files[f"torch-{version}.dist-info/RECORD"] = "\n".join(record) + "\n"
    wheel = folder / f"torch-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


@pytest.mark.install
def test_smoke_extra_resolves_beside_an_older_torch_release(tmp_path: Path) -> None:
    """Installable beside any supported torch: with torch 2.1.2 (the demo's requirement) in the
    environment, `pip install 'cudalint[smoke]'` keeps it. (Only 2.13 exists here as a build
    that runs, so this release is metadata: what the resolver decides, which an exact pin in
    the extra would turn into ResolutionImpossible.)"""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_PROGRESS_BAR="off")
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    _run([*pip, "install", str(_metadata_only_torch(tmp_path, "2.1.2"))], tmp_path, env)

    # What pip would install, decided and reported, nothing installed (the resolver's decision
    # is the test; installing numpy, LibCST and the rest again proved nothing more).
    install = _run([*pip, "install", "--dry-run", "--quiet", "--report", "-", f"{ROOT}[smoke]"],
                   tmp_path, env)
    report = json.loads(install.stdout)
    versions = {item["metadata"]["name"].lower(): item["metadata"]["version"]
                for item in report["install"]}
    assert "torch" not in versions, versions  # 2.1.2 is kept
    assert "cudalint" in versions and "safetensors" in versions and "numpy" in versions

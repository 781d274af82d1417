"""The release: one version, named alike everywhere users copy it from, and the README's
pre-commit block working against a clone of the repository at the release tag."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import cudalint

ROOT = Path(__file__).resolve().parents[1]
VERSION = cudalint.__version__
TAG = f"v{VERSION}"


def _readme_precommit_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## pre-commit\n", 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert match, "the README's pre-commit section has no yaml block"
    return match.group(1)


def test_the_version_is_written_once() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^dynamic = \["version"\]', pyproject, re.M)
    assert not re.search(r"^version\s*=", pyproject, re.M)
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)


def test_the_changelog_tops_with_this_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (\S+)", changelog, re.M)
    # Keep a Changelog: what is merged but not released sits under "Unreleased", above the
    # release this tree's version names, which comes next.
    released = headings[1:] if headings[:1] == ["Unreleased"] else headings
    assert released and released[0] == VERSION


def test_the_readme_precommit_block_names_this_release() -> None:
    block = yaml.safe_load(_readme_precommit_block())
    repo = block["repos"][0]
    assert repo["rev"] == TAG
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert [h["id"] for h in repo["hooks"]] == ["cudalint"]
    assert {h["id"] for h in hooks} == {"cudalint", "cudalint-fix"}
    assert "# - id: cudalint-fix" in _readme_precommit_block()


def test_the_action_installs_this_release() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["inputs"]["version"]["default"] == VERSION
    assert f"@{TAG}" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_readme_precommit_block_runs_both_hooks_at_the_tag(tmp_path: Path) -> None:
    """A clone of this repository holding the release tag (made at the clone's HEAD where the
    checkout has none), used through the README's block as a project would, with the fix
    hook uncommented: the check reports, the fix rewrites and writes the helper."""
    clone = tmp_path / "cudalint"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    tags = subprocess.run(["git", "tag", "--list", TAG], cwd=clone, check=True,
                          capture_output=True, text=True).stdout.split()
    if TAG not in tags:
        subprocess.run(["git", "tag", TAG], cwd=clone, check=True)
    project = tmp_path / "thèse project"
    project.mkdir()
    config = _readme_precommit_block().replace("# - id: cudalint-fix", "- id: cudalint-fix")
    config = re.sub(r"repo: \S+", f"repo: '{clone}'", config)
    (project / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    (project / "train.py").write_text("import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    (project / "bench.py").write_text("import torch\n\ntorch.backends.cudnn.benchmark = True\n")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    subprocess.run(["git", "init", "--quiet"], cwd=project, check=True)
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    result = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"],
                            cwd=project, env=env, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert re.search(r"^cudalint\.+Failed", output, re.M), output
    assert "train.py:3:31: CUD102" in output
    assert re.search(r"^cudalint \(fix\)\.+Failed", output, re.M)
    assert "files were modified by this hook" in output
    fixed = (project / "train.py").read_text()
    assert "from _device import pick_device" in fixed and ".to(pick_device())" in fixed
    assert (project / "_device.py").is_file()
    # The fixed tree passes the check hook; the info-only file never failed it.
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    again = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"],
                           cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr

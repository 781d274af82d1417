"""The release: one version, and references users copy that resolve.

Until a release tag is published, the docs pin this repository at a commit: the README's
pre-commit `rev:`, the Action's `uses: cudalint/cudalint@...` and the GitLab job's
`git+https://...@...` name the same full commit, which must be in this checkout's history and
hold an action and hooks that work as the docs say. Once the tag of this version exists, they
must name it (CONTRIBUTING.md, "Cutting a release"). The README's pre-commit blocks then run as
written against a clone of this repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

import cudalint

ROOT = Path(__file__).resolve().parents[1]
VERSION = cudalint.__version__
TAG = f"v{VERSION}"
REPOSITORY = "https://github.com/cudalint/cudalint"


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def _precommit_blocks() -> tuple[str, list[str]]:
    """The README's pre-commit configuration, and the commands of its shell block."""
    section = _readme().split("\n## pre-commit\n", 1)[1].split("\n## ", 1)[0]
    config = re.search(r"```yaml\n(.*?)```", section, re.S)
    shell = re.search(r"```bash\n(.*?)```", section, re.S)
    assert config and shell, "the README's pre-commit section lacks its yaml or bash block"
    commands = [line.split("#", 1)[0].strip() for line in shell.group(1).splitlines()]
    return config.group(1), [c for c in commands if c]


def _git(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def _references() -> dict[str, str]:
    """What each place users copy from pins: the pre-commit rev, the Action, the GitLab job."""
    readme = _readme()
    config = yaml.safe_load(_precommit_blocks()[0])
    action = re.findall(r"uses: cudalint/cudalint@(\S+)", readme)
    gitlab = re.findall(rf"git\+{re.escape(REPOSITORY)}@([^\"'\s]+)", readme)
    assert len(action) == 1 and len(gitlab) == 1, (action, gitlab)
    return {"pre-commit rev": str(config["repos"][0]["rev"]), "the Action's uses": action[0],
            "the GitLab job": gitlab[0]}


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


def test_the_wheel_the_readme_names_is_this_version() -> None:
    wheels = set(re.findall(r"dist/cudalint-([^-\s]+)-py3-none-any\.whl", _readme()))
    assert wheels == {VERSION}


def test_every_reference_names_one_commit_or_tag_that_exists() -> None:
    references = _references()
    assert len(set(references.values())) == 1, references
    reference = references["pre-commit rev"]
    tagged = _git("rev-parse", "--verify", "--quiet", f"refs/tags/{TAG}^{{commit}}")
    if tagged.returncode == 0:  # the release is published: the docs name its tag
        assert reference == TAG, f"{TAG} is tagged: the docs must name it, not {reference}"
        return
    assert re.fullmatch(r"[0-9a-f]{40}", reference), (
        f"{reference}: no such tag here; until one is published, pin a full commit")
    ancestor = _git("merge-base", "--is-ancestor", reference, "HEAD")
    assert ancestor.returncode == 0, (
        f"{reference} is not in this checkout's history ({ancestor.stderr.strip()}): pin a "
        "commit of it (`pre-commit autoupdate --freeze` writes one)")


def test_the_pinned_commit_holds_what_the_docs_describe() -> None:
    """At the reference: the Action installs its own checkout by default, the two hooks exist."""
    reference = _references()["pre-commit rev"]
    action = yaml.safe_load(_git("show", f"{reference}:action.yml").stdout)
    assert action["inputs"]["version"]["default"] == ""
    install = next(step for step in action["runs"]["steps"] if step.get("id") == "install")
    assert '"") pip install "${GITHUB_ACTION_PATH}"' in install["run"]
    hooks = yaml.safe_load(_git("show", f"{reference}:.pre-commit-hooks.yaml").stdout)
    assert {hook["id"] for hook in hooks} == {"cudalint", "cudalint-fix"}


def test_the_readme_runs_the_fix_hook_before_the_check_hook() -> None:
    config = yaml.safe_load(_precommit_blocks()[0])
    repo = config["repos"][0]
    assert repo["repo"] == REPOSITORY
    assert [hook["id"] for hook in repo["hooks"]] == ["cudalint-fix", "cudalint"]
    commands = _precommit_blocks()[1]
    assert "pre-commit install" in commands
    assert "pre-commit autoupdate --freeze" in commands


def test_the_readme_precommit_blocks_run_as_written(tmp_path: Path) -> None:
    """A clone of this repository stands for GitHub's; a project uses the README's
    configuration and runs its commands: `pre-commit install` makes `git commit` run the
    hooks (the fix rewrites and writes the helper, so the first commit is refused; the fixed
    tree commits), and `autoupdate --freeze` moves `rev:` to a newer commit."""
    clone = tmp_path / "cudalint"
    assert _git("clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone), cwd=tmp_path
                ).returncode == 0
    project = tmp_path / "thèse project"
    project.mkdir()
    config, commands = _precommit_blocks()
    config_file = project / ".pre-commit-config.yaml"
    config_file.write_text(config.replace(f"repo: {REPOSITORY}", f"repo: '{clone}'"),
                           encoding="utf-8")
    (project / "train.py").write_text("import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    (project / "bench.py").write_text("import torch\n\ntorch.backends.cudnn.benchmark = True\n")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com"}

    def run(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", command], cwd=project, env=env,
                              capture_output=True, text=True, timeout=600, check=False)

    assert commands[0] == "pip install pre-commit"  # the dev extra has it: not run here
    assert run("git init --quiet && git add -A").returncode == 0
    assert commands[1] == "pre-commit install"
    installed = run(commands[1])
    assert installed.returncode == 0, installed.stdout + installed.stderr
    first = run("git commit --quiet -m first")
    output = first.stdout + first.stderr
    assert first.returncode == 1, output
    assert re.search(r"^cudalint \(fix\)\.+Failed", output, re.M), output
    assert "files were modified by this hook" in output
    assert re.search(r"^cudalint\.+Passed", output, re.M), output  # after the fix: nothing
    assert _git("rev-parse", "--verify", "--quiet", "HEAD", cwd=project).returncode != 0
    fixed = (project / "train.py").read_text()
    assert "from _device import pick_device" in fixed and ".to(pick_device())" in fixed
    assert (project / "_device.py").is_file()
    second = run("git add -A && git commit --quiet -m fixed")
    assert second.returncode == 0, second.stdout + second.stderr
    for command in commands[2:]:
        done = run(command)
        assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
    moved = str(yaml.safe_load(config_file.read_text())["repos"][0]["rev"])
    if _git("tag", cwd=clone).stdout.split():  # the newest tag's commit
        assert re.fullmatch(r"[0-9a-f]{40}", moved), moved
    else:  # no release yet: the newest commit
        assert moved == _git("rev-parse", "HEAD", cwd=clone).stdout.strip()

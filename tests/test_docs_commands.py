"""Every command a user copies from README.md and docs/*.md works as written.

Each shell block (```bash, ```sh, ```console, ```shell) runs, one command at a time, in a
scratch copy of the demo (`fixtures/demo`) or of the folder its marker names, with this
environment's `cudalint` first on PATH. A command passes when it exits 0 or 1 (1: findings, as
documented; 2 is an error). A block opts out, or changes where it runs, with a marker on the
line before it, an HTML comment that the rendered page does not show:

    <!-- docs-test: skip (the reason) -->          not run (its install commands still checked)
    <!-- docs-test: in fixtures/NAME -->           run in a copy of that folder
    <!-- docs-test: in a clone -->                 run where a clone's root would be (the demo
                                                   copied to fixtures/demo under it)
    <!-- docs-test: without "PREFIX" (reason) -->  its commands starting with PREFIX are not run
    <!-- docs-test: output of "COMMAND" -->        (before a ```text block) the block is what
                                                   COMMAND prints: each of its lines must be a
                                                   line of the output (generated numbers stay true)

Several directives are separated by `;`. Nothing is installed and nothing reaches the network:
`pip`, `pipx` and `python3 -m venv` are fakes that record what they are given; what each
install command names is checked here instead (a path of this checkout, an extra that
pyproject.toml declares, the wheel `scripts/check_dist.sh` builds, or this repository at the
commit the docs pin), in every block, skipped or not, and in the prose and YAML blocks too.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomllib
import yaml

from cudalint import __version__

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
SHELL = frozenset({"bash", "sh", "shell", "console"})
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"<!--\s*docs-test:\s*((?:(?!-->).)*?)\s*-->\s*\Z", re.S)
DIRECTIVE = re.compile(
    r"(?P<skip>skip)\s+\((?P<why>[^)]+)\)"
    r"|in\s+(?P<clone>a clone)"
    r"|in\s+(?P<folder>fixtures/\S+)"
    r"|without\s+\"(?P<prefix>[^\"]+)\"\s+\((?P<without_why>[^)]+)\)"
    r"|output of\s+\"(?P<command>[^\"]+)\"")
INSTALL = re.compile(r"\b(?P<tool>pipx|pip3?|python3? -m pip) install\s+(?P<args>[^`\n&;|#]*)")
REPOSITORY = "https://github.com/cudalint/cudalint"
IGNORED = shutil.ignore_patterns("__pycache__", "*.pt", ".cudalint_cache")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence
    language: str
    text: str
    marker: str  # the directives, "" without a marker

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def directives(self) -> list[re.Match[str]]:
        found = []
        for part in filter(None, (p.strip() for p in self.marker.split(";"))):
            match = DIRECTIVE.fullmatch(part)
            assert match is not None, f"{self.name}: unknown docs-test directive {part!r}"
            found.append(match)
        return found

    def directive(self, group: str) -> str | None:
        return next((m.group(group) for m in self.directives() if m.group(group)), None)

    def commands(self) -> list[str]:
        """The block's commands: `\\` continuations joined, comments and blank lines left out."""
        joined = re.sub(r"\s*\\\n\s*", " ", self.text)
        lines = [line.strip() for line in joined.splitlines()]
        commands = [line for line in lines if line and not line.startswith("#")]
        prefixes = [m.group("prefix") for m in self.directives() if m.group("prefix")]
        return [c for c in commands if not any(c.startswith(p) for p in prefixes)]


def _blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    blocks = []
    for fence in FENCE.finditer(text):
        before = text[: fence.start()].rstrip()
        marker = MARKER.search(before[-400:])
        blocks.append(Block(page, text.count("\n", 0, fence.start()) + 1, fence.group(1),
                            fence.group(2), marker.group(1) if marker else ""))
    return blocks


BLOCKS = [block for page in PAGES for block in _blocks(page)]
SHELL_BLOCKS = [b for b in BLOCKS if b.language in SHELL]
RUN = [b for b in SHELL_BLOCKS if b.directive("skip") is None]
QUOTED = [b for b in BLOCKS if b.directive("command") is not None]


def _scratch(block: Block, tmp_path: Path) -> Path:
    folder = block.directive("folder")
    if block.directive("clone") is not None:
        shutil.copytree(ROOT / "fixtures" / "demo", tmp_path / "clone" / "fixtures" / "demo",
                        ignore=IGNORED)
        return tmp_path / "clone"
    source = ROOT / (folder or "fixtures/demo")
    assert source.is_dir(), f"{block.name}: no folder {folder}"
    shutil.copytree(source, tmp_path / source.name, ignore=IGNORED)
    return tmp_path / source.name


def _fakes(folder: Path, log: Path) -> Path:
    """`pip` and `pipx` that record their arguments; a `python3`/`python` whose `-m venv DIR`
    makes a DIR/bin/activate keeping these fakes and this environment first on PATH."""
    folder.mkdir()
    record = f'printf "%s\\n" "$0 $*" >> {shlex.quote(str(log))}\n'
    for name in ("pip", "pip3", "pipx"):
        (folder / name).write_text(f"#!/bin/sh\n{record}", encoding="utf-8")
    path = f"{folder}{os.pathsep}{Path(sys.executable).parent}"
    python = (
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then\n'
        f"  {record}"
        '  for last in "$@"; do :; done\n'
        '  mkdir -p "$last/bin"\n'
        f"  printf 'export PATH=%s:$PATH\\n' {shlex.quote(path)} > \"$last/bin/activate\"\n"
        "  exit 0\n"
        "fi\n"
        f'exec {shlex.quote(sys.executable)} "$@"\n')
    for name in ("python", "python3"):
        (folder / name).write_text(python, encoding="utf-8")
    for fake in folder.iterdir():
        fake.chmod(0o755)
    return folder


def _environment(tmp_path: Path) -> dict[str, str]:
    fakes = _fakes(tmp_path / "fakes", tmp_path / "installs.log")
    env = {key: value for key, value in os.environ.items() if not key.startswith("CUDALINT_")}
    env["PATH"] = os.pathsep.join([str(fakes), str(Path(sys.executable).parent),
                                   env.get("PATH", os.defpath)])
    env["CUDALINT_NO_CACHE"] = "1"
    return env


def _run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "--noprofile", "--norc", "-o", "pipefail", "-c", command],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.parametrize("block", RUN, ids=[b.name for b in RUN])
def test_the_shell_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    cwd = _scratch(block, tmp_path)
    env = _environment(tmp_path)
    commands = block.commands()
    assert commands, f"{block.name}: nothing to run"
    for command in commands:
        done = _run(command, cwd, env)
        assert done.returncode in (0, 1), (
            f"{block.name}: `{command}` exited {done.returncode}\n{done.stdout}{done.stderr}")
        assert "Traceback (most recent call last)" not in done.stderr, done.stderr


@pytest.mark.parametrize("block", QUOTED, ids=[b.name for b in QUOTED])
def test_quoted_output_is_what_the_command_prints(block: Block, tmp_path: Path) -> None:
    command = block.directive("command")
    assert command is not None
    done = _run(command, _scratch(block, tmp_path), _environment(tmp_path))
    printed = {line.strip() for line in (done.stdout + done.stderr).splitlines()}
    for line in filter(None, (line.strip() for line in block.text.splitlines())):
        assert line in printed, (
            f"{block.name}: `{command}` no longer prints\n  {line}\nit printed:\n"
            f"{done.stdout}{done.stderr}")


def test_every_shell_block_runs_or_says_why_not() -> None:
    """Blocks are found, and every marker parses (a skip always has its reason)."""
    assert len(SHELL_BLOCKS) >= 10 and len(RUN) >= 5, [b.name for b in SHELL_BLOCKS]
    assert QUOTED, "no quoted output is checked"
    for block in BLOCKS:
        block.directives()  # fails on an unknown directive
    for block in QUOTED:
        assert block.language == "text", f"{block.name}: quoted output is a ```text block"
    readme = [b for b in SHELL_BLOCKS if b.page.name == "README.md"]
    assert any("cudalint check fixtures/demo" in b.text for b in readme if b in RUN)


def test_a_marker_is_read_from_the_line_before_its_block(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs-test: skip (needs a Mac) -->\n```bash\nsay hi\n```\n\nText.\n\n"
        "```bash\ncudalint check . \\\n    --fix  # a comment\n# only a comment\n```\n",
        encoding="utf-8")
    first, second = _blocks(page)
    assert first.directive("skip") == "skip" and first.directive("why") == "needs a Mac"
    assert second.marker == ""
    assert second.commands() == ["cudalint check . --fix  # a comment"]


# --- install commands ----------------------------------------------------------------------


def _pyproject() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)


def _pinned() -> str:
    """The commit or tag the README's pre-commit block pins (tests/test_release.py checks that
    it exists, and that the Action and the GitLab job name the same)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^\s+rev: (\S+)", readme, re.M)
    assert match, "the README's pre-commit block pins nothing"
    return match.group(1)


def _install_problem(argument: str) -> str | None:
    """What is wrong with one requirement an install command names (None: nothing)."""
    requirement = argument.strip("'\"")
    extras = re.search(r"\[([^\]]*)\]$", requirement)
    base = requirement[: extras.start()] if extras else requirement
    if extras:
        declared = set(_pyproject()["project"]["optional-dependencies"])
        unknown = {e.strip() for e in extras.group(1).split(",")} - declared
        if unknown:
            return f"extras {sorted(unknown)} are not declared in pyproject.toml"
    if base.startswith("cudalint @ ") or base.startswith("git+"):
        url = base.removeprefix("cudalint @ ")
        if url != f"git+{REPOSITORY}@{_pinned()}":
            return f"{url}: not this repository at the commit the docs pin"
        return None
    if re.fullmatch(r"cudalint\b.*", base):
        return "cudalint is not on the package index: install from a clone or the wheel"
    if base in {".", "./"} or base.startswith(("./", "/", "dist/", "$", "${")):
        return _local_problem(base)
    return None  # another package (pre-commit, torch): from the index, as it is published


def _local_problem(base: str) -> str | None:
    if base.startswith(("$GITHUB_ACTION_PATH", "${{ github.action_path }}",
                        '"${GITHUB_ACTION_PATH}"', "${GITHUB_ACTION_PATH}")):
        return None  # the action's own checkout: this repository's root
    if base.startswith("dist/"):
        script = (ROOT / "scripts" / "check_dist.sh").read_text(encoding="utf-8")
        wheel = f"dist/cudalint-{__version__}-py3-none-any.whl"
        if "${1:-$root/dist}" not in script or base != wheel:
            return f"{base}: not the wheel scripts/check_dist.sh builds into dist/ ({wheel})"
        return None
    path = ROOT / base
    if not (path / "pyproject.toml").is_file():
        return f"{base}: no project there (a clone's root is `.`)"
    return None


def _install_commands() -> list[tuple[str, str]]:
    """(where, command) for every install command in the pages, the YAML blocks' scripts and
    action.yml's install step."""
    found = []
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for match in INSTALL.finditer(line):
                found.append((f"{page.relative_to(ROOT)}:{number}", match.group("args")))
    return found


def _arguments(text: str) -> list[str]:
    words = shlex.split(text.replace("${{ github.action_path }}", "${GITHUB_ACTION_PATH}"))
    arguments, skip_next = [], False
    for word in words:
        if skip_next:
            skip_next = False
        elif word in {"--index-url", "--extra-index-url", "-i", "-r", "-c", "--python"}:
            skip_next = True
        elif not word.startswith("-"):
            arguments.append(word)
    return arguments


def test_every_install_command_names_something_a_user_can_install_today() -> None:
    commands = _install_commands()
    assert len(commands) >= 5, commands
    problems = [f"{where}: {argument}: {problem}"
                for where, text in commands for argument in _arguments(text)
                if (problem := _install_problem(argument)) is not None]
    assert not problems, "\n".join(problems)


def test_the_install_check_refuses_what_does_not_exist() -> None:
    assert _install_problem("cudalint") is not None
    assert _install_problem("'cudalint[lsp]'") is not None
    assert _install_problem("cudalint==0.2.0") is not None
    assert _install_problem('".[nope]"') is not None
    assert _install_problem("./nowhere") is not None
    assert _install_problem("dist/other-1.0.whl") is not None
    assert _install_problem(f"cudalint @ git+{REPOSITORY}@{'0' * 40}") is not None
    assert _install_problem('".[dev]"') is None
    assert _install_problem(".") is None
    assert _install_problem(f"dist/cudalint-{__version__}-py3-none-any.whl") is None
    assert _install_problem("dist/cudalint-0.0.1-py3-none-any.whl") is not None
    assert _install_problem(f"cudalint @ git+{REPOSITORY}@{_pinned()}") is None
    assert _install_problem("pre-commit") is None


def test_the_gitlab_job_runs_as_written(tmp_path: Path) -> None:
    """The README's `.gitlab-ci.yml` job: its install names the pinned commit (checked above),
    its other script lines run in the demo and write the reports its artifacts name."""
    block = next(b for b in BLOCKS if b.language == "yaml" and ".gitlab-ci.yml" in b.text)
    job = yaml.safe_load(block.text)["cudalint"]
    cwd = _scratch(block, tmp_path)
    env = _environment(tmp_path)
    for command in job["script"]:
        done = _run(command, cwd, env)
        assert done.returncode in (0, 1), f"`{command}` exited {done.returncode}: {done.stderr}"
    reports = job["artifacts"]["reports"]
    for report in (reports["codequality"], reports["junit"]):
        assert (cwd / report).stat().st_size > 0, report
    installs = (tmp_path / "installs.log").read_text(encoding="utf-8").splitlines()
    assert [line.split(" ", 1)[1] for line in installs] == [
        f"install cudalint @ git+{REPOSITORY}@{_pinned()}"]

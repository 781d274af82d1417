"""Every `cudalint smoke` and `cudalint report` example of the README and of docs/index.md,
docs/smoke.md and docs/report.md runs as written, and passes: on a copy of the demo fixed by
`cudalint check --fix` (the examples run after it), `--init` on a copy of its own. Two changes,
both of this machine: `--device cuda` runs on the CPU (no GPU here), and every run is
`--in-process` (one torch import for all). The examples are read from the files, so an example
added without a run here fails the test."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudalint.cli import main

ROOT = Path(__file__).resolve().parents[3]
FILES = ("README.md", "docs/index.md", "docs/smoke.md", "docs/report.md")
_SPAN = re.compile(r"`(cudalint smoke [^`]+)`")
_PLACEHOLDER = re.compile(r"\[|\.\.\.|\b(TARGET|PATH|FILE|N|SECONDS)\b")
# Each example, as normalized, and the project it runs in: the demo after --fix, or a copy of
# the demo that --init writes its target into. In order: a reference is saved before use.
RUNS = {
    ("--init",): "init",
    ("smoke_target.py:train_step",): "init",
    ("smoke_target.py:forward",): "init",
    ("smoke_target.py:train_step", "--device", "cpu", "--save-reference",
     "ref.safetensors"): "fixed",
    ("smoke_target.py:train_step", "--reference", "ref.safetensors"): "fixed",
    ("smoke_target.py:train_step", "--json", "smoke-cpu.json"): "fixed",
    ("smoke_target.py:train_step", "--json", "run.json"): "fixed",
    ("smoke_target.py:train_step", "--reference", "ref.safetensors", "--json",
     "smoke-mps.json"): "fixed",
}


def _commands(name: str) -> list[str]:
    """The command lines of a page's bash blocks, continuation lines joined."""
    text = (ROOT / name).read_text(encoding="utf-8")
    return [line for block in re.findall(r"```bash\n(.*?)```", text, re.S)
            for line in block.replace("\\\n", " ").splitlines()]


def report_examples() -> list[list[str]]:
    """The `cudalint report` commands of the docs' bash blocks, without `cudalint` and the
    comment: run in the fixed demo after the smoke examples, whose files they read."""
    return [shlex.split(line.split("  #")[0].strip())[2:] for name in FILES
            for line in _commands(name)
            if line.startswith("cudalint report ") and not _PLACEHOLDER.search(line)]


def examples() -> set[tuple[str, ...]]:
    """The smoke commands of the docs, normalized: no `cudalint smoke`, no comment, the demo's
    path from the repository dropped, `--device cuda` on the CPU."""
    found = set()
    for name in FILES:
        commands = _commands(name) + _SPAN.findall((ROOT / name).read_text(encoding="utf-8"))
        for command in commands:
            command = command.split("  #")[0].strip()
            argv = shlex.split(command)[2:] if command.startswith("cudalint smoke") else []
            # A command names a target or --init; prose names an option (`cudalint smoke
            # --json` writes it) or a placeholder.
            if argv and (":" in argv[0] or argv[0] == "--init") and not _PLACEHOLDER.search(
                    command):
                found.add(_normalized(argv))
    return found


def _normalized(argv: list[str]) -> tuple[str, ...]:
    argv = [arg.removeprefix("fixtures/demo/") for arg in argv]
    return tuple("cpu" if arg == "cuda" and argv[index - 1] == "--device" else arg
                 for index, arg in enumerate(argv))


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("docs")
    projects = {kind: base / kind for kind in ("fixed", "init")}
    for folder in projects.values():
        shutil.copytree(ROOT / "fixtures" / "demo", folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pt"))
    (projects["init"] / "smoke_target.py").unlink()
    assert main(["check", "--fix", "--quiet", str(projects["fixed"])]) in (0, 1)
    return projects


@pytest.fixture(scope="module")
def outcomes(projects: dict[str, Path]) -> dict[tuple[str, ...], int]:
    codes = {}
    for argv, kind in RUNS.items():
        with _inside(projects[kind]):
            codes[argv] = main(["smoke", *argv, *(() if argv == ("--init",) else
                                                  ("--in-process",))])
    return codes


def test_every_report_example_runs_as_written(projects: dict[str, Path],
                                             outcomes: dict[tuple[str, ...], int],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """After the smoke examples wrote their files: each `cudalint report` line exits 0 and
    writes what it names (`-o`)."""
    found = report_examples()
    assert len(found) >= 3  # docs/index.md's and docs/report.md's trial
    for argv in found:
        with _inside(projects["fixed"]):
            code = main(["report", *argv])
        capsys.readouterr()
        assert code == 0, argv
        if "-o" in argv:
            assert (projects["fixed"] / argv[argv.index("-o") + 1]).stat().st_size > 0


def test_every_smoke_example_of_the_docs_is_run_here() -> None:
    assert examples() == set(RUNS)


@pytest.mark.parametrize("argv", list(RUNS), ids=" ".join)
def test_the_example_runs_as_written(outcomes: dict[tuple[str, ...], int],
                                     argv: tuple[str, ...]) -> None:
    assert outcomes[argv] == 0


_KILL_PREAMBLE = '''
import os
from pathlib import Path

import torch
from torch import nn


def build(device):
    model = nn.Linear(6, 2).to(device)
    return model, torch.optim.Adam(model.parameters(), lr=0.1)


def train_one_step(model, optimizer):
    features, targets = torch.ones(8, 6), torch.zeros(8, 2)
    optimizer.zero_grad()
    nn.functional.mse_loss(model(features), targets).backward()
    optimizer.step()


def save_checkpoint(state, path):
    torch.save(state, path.with_suffix(".tmp"))
    os.replace(path.with_suffix(".tmp"), path)
'''


def test_the_kill_after_example_runs_without_a_kill(tmp_path: Path, smoke) -> None:
    """docs/smoke.md's `--kill-after` target, as written: a run without the kill gives it a
    checkpoint folder of its own (it met `Path(None)`)."""
    text = (ROOT / "docs" / "smoke.md").read_text(encoding="utf-8")
    section = text.split("### Killed run", 1)[1]
    example = re.search(r"```python\n(.*?)```", section, re.S)
    assert example is not None
    (tmp_path / "trainer.py").write_text(_KILL_PREAMBLE + "\n\n" + example.group(1))
    code, report, _, err = smoke(f"{tmp_path / 'trainer.py'}:train")
    assert code == 0, (err, report and report["checks"])

"""The cyclic garbage collector during a check (cudalint.engine.running.collector): held off while a
file is checked, and left with nothing to find afterwards, since a check's trees are freed by
reference counting."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudalint.engine.checkers.job import FileReport, Job
from cudalint.engine.contract import PythonRule
from cudalint.engine.lint.python import lint_python
from cudalint.engine.running import runner
from cudalint.engine.running.collector import HeldOff
from cudalint.engine.running.runner import RunOptions, check_file
from cudalint.engine.settings import Settings
from cudalint.kinds import FileKind
from cudalint.rules import all_rules

# A training script that several rules report on, among them the eight that follow
# assignments (the walk's shared record of them was one of the cycles).
TRAINING = b'''"""Train a small model on the GPU."""
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
use_cuda = torch.cuda.is_available()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x.cuda())


def train(steps=3):
    model = Net().to(device)
    scaler = torch.cuda.amp.GradScaler()
    for _ in range(steps):
        x = torch.randn(8, 4, device="cuda", dtype=torch.float64)
        loss = model(x).sum()
        scaler.scale(loss).backward()
    torch.cuda.synchronize()
    return model
'''


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_held_off_turns_the_collector_off_inside_and_back_on_after(collector_on: None) -> None:
    with HeldOff():
        assert not gc.isenabled()
        with HeldOff():  # a cached file's check inside the run's
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner one does not turn it back on
    assert gc.isenabled()


def test_held_off_leaves_a_collector_the_program_turned_off_alone(collector_on: None) -> None:
    gc.disable()
    with HeldOff():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_held_off_collects_the_cycles_made_inside(collector_on: None) -> None:
    class Node:
        pass

    with HeldOff():
        first, second = Node(), Node()
        first.other, second.other = second, first  # type: ignore[attr-defined]
        alive = weakref.ref(first)
        del first, second
        assert alive() is not None  # nothing collected meanwhile
    assert alive() is None


def test_held_off_turns_it_back_on_when_the_check_raises(collector_on: None) -> None:
    with pytest.raises(RuntimeError), HeldOff():
        raise RuntimeError("a rule's bug")
    assert gc.isenabled()


def test_a_file_is_checked_with_the_collector_held_off(tmp_path: Path, collector_on: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    checker = runner.checker_for(FileKind.PYTHON)

    def recording(job: Job) -> FileReport:
        seen.append(gc.isenabled())
        return checker(job)

    monkeypatch.setattr(runner, "checker_for", lambda kind: recording)
    path = tmp_path / "train.py"
    path.write_bytes(TRAINING)
    report = check_file(path, FileKind.PYTHON, all_rules(), Settings(), RunOptions())
    assert seen == [False]
    assert gc.isenabled()
    assert {"CUD101", "CUD102"} <= {finding.code for finding in report.findings}


@pytest.mark.parametrize("sparse", [True, False], ids=["sparse", "whole"])
def test_a_checked_module_is_freed_without_the_collector(sparse: bool, collector_on: None
                                                         ) -> None:
    """Neither the walk nor the rules' shared records leave a cycle holding the tree: once
    the result is dropped, reference counting alone frees every node LibCST made, and the
    rules and their context."""
    import libcst as cst

    from cudalint.engine.first_pass.prefilter import Prefilter
    from cudalint.engine.walk.context import PythonContext

    rules = tuple(r for r in all_rules() if issubclass(r, PythonRule))
    settings = Settings()
    gc.collect()
    gc.disable()
    result = lint_python(TRAINING, Path("train.py"), rules, settings,
                         prefilter=Prefilter.for_rules(rules, settings), sparse=sparse,
                         want_edits=True)
    assert len(result.findings) >= 5
    del result
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        left = [type(o).__name__ for o in gc.garbage
                if isinstance(o, (cst.CSTNode, PythonContext, PythonRule))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert left == []

"""A check's fix simulation (engine/lint/foreseen.py) reads only the functions that hold the
findings near a fix (engine/lint/nearby.py), and counts what `--fix` fixes as a simulation of
the whole file does."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.engine.lint import nearby as nearby_module
from cudalint.engine.lint.nearby import nearby
from cudalint.finding import Finding, Position

TRAIN = '''\
import torch


def setup(rank):
    model = build().cuda(device=rank)
    return model


class Trainer:
    def step(self, batch):
        return self.model(batch.cuda())

    def evaluate(self, batch):
        x = torch.zeros(3, device="cuda")
        return self.model(batch), x


def report(loss):
    print(f"loss {loss:.3f}")
    return loss
'''


def _finding(row: int, end_row: int | None = None) -> Finding:
    return Finding(code="CUD113", message="m", path=Path("train.py"),
                   location=Position(row, 1), end_location=Position(end_row or row, 2))


def test_only_the_units_holding_a_nearby_finding_are_read() -> None:
    part = nearby(TRAIN.encode(), [_finding(5)], helpers=frozenset())
    assert [unit.name for unit in part.hidden] == ["Trainer", "report"]
    lines = part.data.decode().splitlines()
    assert lines[4] == "    model = build().cuda(device=rank)"  # read, where it was
    assert lines[8].startswith('b"""') and "step" not in part.data.decode()
    assert len(lines) == len(TRAIN.splitlines())  # every position stays exact
    assert part.read(_finding(5)) and not part.read(_finding(14))


def test_a_class_keeps_the_methods_that_hold_one() -> None:
    part = nearby(TRAIN.encode(), [_finding(14)], helpers=frozenset())
    assert [unit.name for unit in part.hidden] == ["setup", "step", "report"]
    assert 'device="cuda"' in part.data.decode() and "class Trainer:" in part.data.decode()
    assert part.read(_finding(14)) and not part.read(_finding(11))


def test_a_class_in_a_class_keeps_only_what_holds_one() -> None:
    """A test module's shape: the tests in a class inside the class the module runs."""
    source = ("import torch\n\n\nclass DistributedTest:\n    class _DistTestBase:\n"
              "        def test_a(self):\n            x = y.cuda(device=rank)\n\n"
              "        @skip_if_no_gpu\n        def test_b(self):\n"
              "            torch.cuda.synchronize()\n\n    def helper(self):\n"
              "        return 1\n")
    part = nearby(source.encode(), [_finding(7)], helpers=frozenset())
    assert [unit.name for unit in part.hidden] == ["test_b", "helper"]
    assert "synchronize" not in part.data.decode() and "y.cuda(device=rank)" in part.data.decode()
    compile(part.data, "blanked.py", "exec")  # still Python, every line where it was
    assert len(part.data.splitlines()) == len(source.splitlines())


def test_a_helper_a_fix_calls_and_a_name_a_blanked_unit_spells_are_kept_in_view() -> None:
    source = TRAIN + "\n\ndef pick_device():\n    return torch.device('cpu')\n"
    part = nearby(source.encode(), [_finding(5)], helpers=frozenset({"pick_device"}))
    assert "pick_device" not in [unit.name for unit in part.hidden]
    assert part.blanks({"print"}) and not part.blanks({"build"})


def test_the_fixable_count_is_that_of_the_whole_file(tmp_path: Path, capsys,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """CUD113 inside CUD102's `.cuda(device=rank)` goes with its safe fix: counted so, while
    the simulation reads `setup` alone."""
    read: list[list[str]] = []

    def recorded(*args, **kwargs):
        part = real(*args, **kwargs)
        read.append([unit.name for unit in part.hidden])
        return part

    real = nearby_module.nearby
    monkeypatch.setattr(nearby_module, "nearby", recorded)
    (tmp_path / "train.py").write_text(TRAIN)
    monkeypatch.chdir(tmp_path)
    main(["check", "--no-cache", "--output-format", "concise", "."])
    out = capsys.readouterr().out
    assert read == [["Trainer", "report"]]
    assert "(1 of them by another finding's fix)" in out
    main(["check", "--fix", "."])
    assert "0 remaining" in capsys.readouterr().out

"""The records a run builds (cudalint.record): compared, hashed, ordered, copied and pickled
as the dataclasses they replace were."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from cudalint.config import Config
from cudalint.engine.checkers.job import FileReport
from cudalint.engine.running.runner import RunOptions
from cudalint.engine.settings import Settings
from cudalint.finding import Applicability, Edit, Finding, Fix, Position, Severity


def _finding(**changes: object) -> Finding:
    fix = Fix(Applicability.SAFE, "use pick_device()",
              (Edit("pick_device()", Position(3, 5), Position(3, 11)),))
    finding = Finding("CUD102", "`.cuda()` call", Path("train.py"), Position(3, 5),
                      Position(3, 11), Severity.ERROR, fix=fix)
    return finding.replace(**changes)


def test_findings_are_equal_by_value_and_hash_alike_whatever_their_extra():
    first, second = _finding(), _finding(extra={"note": "kept apart"})
    assert first == second and hash(first) == hash(second)
    assert first is not second
    assert len(dict.fromkeys([first, second, _finding(guarded=True)])) == 2
    assert _finding(cell=2) != first
    assert first != (first.code, first.message)  # never equal to another type


def test_replace_copies_with_changes_and_refuses_an_unknown_field():
    finding = _finding()
    guarded = finding.with_guard()
    assert (guarded.guarded, guarded.severity) == (True, Severity.WARNING)
    assert (finding.guarded, finding.severity) == (False, Severity.ERROR)  # unchanged
    assert guarded.replace(guarded=False, severity=Severity.ERROR) == finding
    with pytest.raises(TypeError, match="colour"):
        finding.replace(colour="red")


def test_positions_order_by_row_then_column():
    positions = [Position(2, 1), Position(1, 9), Position(1, 2)]
    assert sorted(positions) == [Position(1, 2), Position(1, 9), Position(2, 1)]
    assert Position(1, 2) <= Position(1, 2) < Position(1, 3) and Position(2, 1) > Position(1, 9)
    with pytest.raises(TypeError):
        assert Position(1, 2) < (1, 3)  # type: ignore[operator]


def test_mutable_records_compare_by_value_and_are_unhashable():
    assert Config(root=Path("/p")) == Config(root=Path("/p"))
    assert Config(root=Path("/p")) != Config(root=Path("/p"), select=["CUD1"])
    assert Config(root=Path("/p")).select is not Config(root=Path("/p")).select  # not shared
    assert Settings() == Settings() != Settings(target_torch=(2, 1))
    for record in (Config(root=Path("/p")), Settings(), RunOptions(), FileReport(Path("x"), [])):
        with pytest.raises(TypeError, match="unhashable"):
            hash(record)


def test_records_survive_pickling_as_a_worker_receives_and_returns_them():
    report = FileReport(Path("train.py"), [_finding()], "x = 1\n", fixed=1)
    options = RunOptions(fix=True, select=["CUD1"])
    assert pickle.loads(pickle.dumps(report)) == report
    assert pickle.loads(pickle.dumps(options)) == options
    assert repr(Position(3, 5)) == "Position(row=3, column=5)"

"""The audit checks the files once (as `--diff` does: findings before and after the safe fixes),
and once more only when a finding has an unsafe fix; it decides as three separate runs did."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalint import rules as registry
from cudalint.config import load_config
from cudalint.engine.running.runner import RunOptions, run
from cudalint.report import audit as audit_module
from cudalint.report.audit import Effort, audit, classify_effort

_SAFE_ONLY = """\
import torch

model = torch.nn.Linear(4, 2).cuda()
print("moving the model to cuda")  # prose: not a finding
"""
_WITH_UNSAFE = _SAFE_ONLY + """
scaler = torch.cuda.amp.GradScaler()
"""


@pytest.fixture
def runs(monkeypatch) -> list[RunOptions]:
    seen: list[RunOptions] = []

    def counted(paths, config, options, progress=None, *, registry):
        seen.append(options)
        return run(paths, config, options, progress, registry=registry)

    monkeypatch.setattr(audit_module, "run", counted)
    return seen


def _three_runs(path: Path):
    config = load_config(path)
    findings = [[f for r in run([path], config, options, registry=registry)
                 for f in r.findings] for options in (
        RunOptions(jobs=1), RunOptions(diff=True, jobs=1),
        RunOptions(diff=True, unsafe_fixes=True, jobs=1))]
    return classify_effort(*findings)


def test_one_run_when_no_fix_is_unsafe(tmp_path, runs):
    (tmp_path / "train.py").write_text(_SAFE_ONLY)
    result = audit([tmp_path], load_config(tmp_path), jobs=1)
    assert [options.diff for options in runs] == [True]
    assert [item.effort for item in result.items] == [Effort.FIXABLE]
    assert result == _three_runs(tmp_path)


def test_a_second_run_only_for_unsafe_fixes(tmp_path, runs):
    (tmp_path / "train.py").write_text(_WITH_UNSAFE)
    result = audit([tmp_path], load_config(tmp_path), jobs=1)
    assert [(options.diff, options.unsafe_fixes) for options in runs] == [(True, False),
                                                                          (True, True)]
    assert result == _three_runs(tmp_path)
    assert Effort.UNSAFE_FIXABLE in {item.effort for item in result.items}

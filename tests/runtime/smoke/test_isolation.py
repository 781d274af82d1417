"""The target runs in a child process: whatever it does, the harness reports it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from cudalint.runtime.smoke.command import main

from .helpers import check, target


def _isolated(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("function", "error_type", "cause"), [
    ("hard_exit", "Exit", "exited with status 7 before writing its report"),
    ("segfault", "Signal", "killed by SIGSEGV: a segmentation fault"),
])
def test_a_target_that_ends_the_process_is_a_failed_run(
        capsys, function: str, error_type: str, cause: str) -> None:
    code, out, err = _isolated(capsys, target(f"hostile.py:{function}"), "--json", "-")
    assert code == 1
    report = json.loads(out)
    assert report["verdict"] == "fail"
    assert report["error"]["error_type"] == error_type
    assert cause in check(report, "run")["detail"]
    if function == "segfault":  # faulthandler shows the user's line, in the report and on stderr
        assert "hostile.py\", line 27 in segfault" in report["error"]["output_tail"]
        assert "in segfault" in err


def test_a_hang_is_stopped_by_the_timeout(capsys) -> None:
    code, out, _ = _isolated(capsys, target("hostile.py:hangs"), "--timeout", "2")
    assert code == 1
    assert "FAIL     run          Timeout: the target did not finish within 2 s (--timeout)" in out


def test_exit_and_keyboard_interrupt_are_crashes_with_the_users_line(tmp_path: Path,
                                                                       capsys) -> None:
    for function, expected in (("exits", "SystemExit: 3"), ("interrupted", "KeyboardInterrupt")):
        path = tmp_path / f"{function}.json"
        code, _, _ = _isolated(capsys, target(f"hostile.py:{function}"), "--json", str(path))
        detail = check(json.loads(path.read_text()), "run")["detail"]
        assert code == 1
        assert detail.startswith(expected) and "hostile.py:" in detail


def test_what_the_target_prints_stays_out_of_the_json(capsys) -> None:
    code, out, err = _isolated(capsys, target("hostile.py:chatty"), "--json", "-")
    assert code == 0
    assert json.loads(out)["verdict"] == "pass"
    assert "model has 10 parameters" in err
    assert "a line printed by native code" in err


def test_in_process_prints_go_to_stderr(capsys) -> None:
    code, out, err = _isolated(capsys, target("hostile.py:chatty"), "--in-process", "--json", "-")
    assert code == 0
    assert json.loads(out)["verdict"] == "pass"
    assert "model has 10 parameters" in err


@pytest.mark.parametrize("in_process", [True, False])
def test_the_reference_is_validated_before_the_target_is_imported(
        tmp_path: Path, capsys, in_process: bool) -> None:
    marker = tmp_path / "imported"
    script = tmp_path / "train.py"
    script.write_text("from pathlib import Path\n"
                      f"Path({str(marker)!r}).write_text('yes')\n"
                      "def step(device):\n    return 1\n")
    bogus = tmp_path / "ref.safetensors"
    save_file({"x": torch.zeros(1)}, str(bogus))
    flags = ["--in-process"] if in_process else []
    code, _, err = _isolated(capsys, f"{script}:step", "--reference", str(bogus), *flags)
    assert code == 2
    assert err == (f"cudalint smoke: error: {bogus} is not a cudalint smoke reference (no "
                   "'cudalint' metadata); save one with --save-reference\n")
    assert not marker.exists()


def test_harness_errors_in_the_child_are_one_line(capsys) -> None:
    code, _, err = _isolated(capsys, target("healthy.py:nope"))
    assert code == 2
    assert err.startswith("cudalint smoke: error: ") and "has no function 'nope'" in err
    assert err.count("\n") == 1

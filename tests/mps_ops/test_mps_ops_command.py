from __future__ import annotations

import io
import json

import pytest

from cudalint.commands import mps_ops as command
from cudalint.commands.mps_ops import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_default_lists_ops_without_an_mps_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--target-torch", "2.13.0")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "torch 2.13.0"
    assert lines[1].split() == ["op", "status", "cuda", "fallback", "reached", "from"]
    rows = {line.split()[0]: line for line in lines[2:]}
    assert rows["linalg_eig"].split()[1:4] == ["no-mps", "yes", "rescued"]
    assert "torch.linalg.eigvals" in rows["linalg_eig"]
    assert rows["linalg_svd"].split()[1:3] == ["always-fallback", "no"]
    assert "CPU already" in rows["linalg_svd"]
    assert "mm" not in rows
    # 2584 entries - 890 with MPS - 1339 composite: 355 with neither (embedding_renorm_ among
    # them), and 4 ALWAYS_FALLBACK ops the yaml gives an MPS or composite kernel
    assert len(rows) == 355 + 4


def test_all_lists_every_op(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--target-torch", "2.13.0", "--all")
    assert code == 0
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[2:]}
    assert len(rows) == 2584
    assert rows["mm"] == "mps"
    assert rows["linalg_solve"] == "composite"


def test_nearest_version_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--target-torch", "2.12.1")
    assert code == 0
    assert out.splitlines()[0] == (
        "no table for torch 2.12.1: the oldest shipped one, torch 2.13.0, is shown")


def test_bad_version_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--target-torch", "not-a-version")
    assert (code, out) == (2, "")
    assert err == "cudalint mps-ops: invalid torch version 'not-a-version'\n"


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--target-torch", "2.12", "--json")
    assert code == 0
    document = json.loads(out)
    assert (document["torch"], document["requested"], document["exact"]) == (
        "2.13.0", "2.12", False)
    by_op = {row["op"]: row for row in document["ops"]}
    assert by_op["_pdist_forward"] == {
        "op": "_pdist_forward",
        "status": "no-mps",
        "cuda": True,
        "rescued_by_fallback": True,
        "calls": ["torch.nn.functional.pdist", "torch.pdist"],
        "backward_calls": [],
    }
    assert by_op["col2im"]["rescued_by_fallback"] is False


def test_op_shows_its_overloads(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--target-torch", "2.13.0", "--op", "aten::linalg_eig")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()[2:]] == ["linalg_eig", "linalg_eig.out"]


def test_op_takes_a_python_call(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--target-torch", "2.13.0", "--op", "torch.nn.CTCLoss", "--json")
    assert code == 0
    ops = [row["op"] for row in json.loads(out)["ops"]]
    assert ops[:2] == ["_ctc_loss.Tensor", "_ctc_loss_backward.Tensor"]  # missing ones first


def test_unknown_op(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--target-torch", "2.13.0", "--op", "nope")
    assert (code, out) == (2, "")  # a usage error, as in every command
    assert "no op or call named 'nope'" in err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_rich_table_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(command.sys, "stdout", terminal)
    assert main(["--target-torch", "2.14.0", "--op", "mode"]) == 0
    text = terminal.getvalue()
    assert "no table for torch 2.14.0: the nearest shipped one, torch 2.14.1" in text
    assert "mode.values" in text
    assert "┃" in text or "|" in text

"""Files a target wrote and named: numeric files compared within the tolerance, others byte for
byte, every one recorded with its sha256 in the report."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from cudalint.runtime.smoke.artefacts import Artefact, artefact_records
from cudalint.runtime.smoke.compare import EXACT, Tolerance, compare_outputs
from cudalint.runtime.smoke.outputs import UnreadableFile, UnsupportedOutput, flatten
from cudalint.runtime.smoke.render import plain
from cudalint.runtime.smoke.report import SmokeReport

from .helpers import check, target

TOLERANCE = Tolerance()  # float32: rtol 1.3e-6, atol 1e-5


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_each_numeric_kind_becomes_tensors_and_is_recorded(tmp_path: Path) -> None:
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "a.npy", values)
    np.savez(tmp_path / "b.npz", second=values * 2, first=values)
    torch.save({"w": torch.ones(2), "step": 3}, tmp_path / "c.pt")
    save_file({"w": torch.zeros(3)}, str(tmp_path / "d.safetensors"))
    (tmp_path / "e.csv").write_text("x,y\n1,2.5\n3,4\n")
    (tmp_path / "f.csv").write_text("1,2\n3,4\n")
    names = ("a.npy", "b.npz", "c.pt", "d.safetensors", "e.csv", "f.csv")
    output = {name[0]: tmp_path / name for name in names}
    files: list[Artefact] = []
    leaves = {leaf.path: leaf.value for leaf in flatten(output, files)}
    assert torch.equal(leaves["a"], torch.from_numpy(values))
    assert torch.equal(leaves["b['second']"], torch.from_numpy(values * 2))
    assert leaves["c['step']"] == 3
    assert torch.equal(leaves["d['w']"], torch.zeros(3))
    assert leaves["e['header']"] == "x,y"
    assert torch.equal(leaves["e['values']"], torch.tensor([[1, 2.5], [3, 4]]))
    assert leaves["e['values']"].dtype == torch.float32
    assert leaves["f"].dtype == torch.int64  # integers stay exact
    assert [(f.output, f.compared, f.sha256) for f in files] == [
        (name[0], "numeric", _sha(tmp_path / name)) for name in names]


def test_other_files_and_unreadable_numeric_ones_are_compared_as_bytes(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").write_text('{"accuracy": 0.9}')
    (tmp_path / "broken.npy").write_bytes(b"not numpy")
    (tmp_path / "ragged.csv").write_text("1,2\n3\n")
    files: list[Artefact] = []
    leaves = flatten([tmp_path / "metrics.json", tmp_path / "broken.npy",
                      tmp_path / "ragged.csv"], files)
    assert [leaf.value for leaf in leaves] == [
        f"17 bytes, sha256 {_sha(tmp_path / 'metrics.json')}",
        f"9 bytes, sha256 {_sha(tmp_path / 'broken.npy')}",
        f"6 bytes, sha256 {_sha(tmp_path / 'ragged.csv')}"]
    assert {f.compared for f in files} == {"bytes"}


def test_a_folder_names_every_file_in_it(tmp_path: Path) -> None:
    (tmp_path / "out" / "plots").mkdir(parents=True)
    (tmp_path / "out" / "plots" / "loss.png").write_bytes(b"\x89PNG")
    np.save(tmp_path / "out" / "preds.npy", np.zeros(2, dtype=np.float32))
    leaves = flatten({"out": tmp_path / "out"})
    assert [leaf.path for leaf in leaves] == ["out['plots/loss.png']", "out['preds.npy']"]


def test_a_missing_file_is_an_output_that_cannot_be_compared(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFile) as raised:
        flatten({"predictions": tmp_path / "nowhere.npy"})
    assert isinstance(raised.value, UnsupportedOutput)
    assert str(raised.value) == (f"output predictions names {tmp_path / 'nowhere.npy'}, which "
                                 "cannot be read: No such file or directory")


def _run(folder: Path, shift: float = 0.0, note: str = "done") -> list:
    folder.mkdir(exist_ok=True)
    values = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3) + np.float32(shift)
    np.save(folder / "preds.npy", values)
    (folder / "note.txt").write_text(note)
    return flatten({"preds": folder / "preds.npy", "note": folder / "note.txt"})


@pytest.mark.parametrize(("shift", "note", "differs"), [
    (0.0, "done", []),
    (2e-6, "done", []),  # within float32's atol 1e-5, though not equal
    (1e-2, "done", ["preds"]),
    (0.0, "done!", ["note"]),
])
def test_files_compare_within_tolerance_or_byte_for_byte(
        tmp_path: Path, shift: float, note: str, differs: list[str]) -> None:
    reference = _run(tmp_path / "reference")
    found = compare_outputs(_run(tmp_path / "run", shift, note), reference, TOLERANCE)
    assert [difference.path for difference in found] == differs
    if shift == 2e-6:
        assert compare_outputs(_run(tmp_path / "run", shift), reference, EXACT)  # not equal
    if differs == ["note"]:
        assert found[0].detail.startswith("'5 bytes, sha256 ")


def test_the_record_pairs_each_file_with_the_reference_runs() -> None:
    mine = [Artefact("preds", "/a/preds.npy", "numeric", 10, "aa"),
            Artefact("note", "/a/note.txt", "bytes", 3, "bb")]
    theirs = [Artefact("preds", "/b/preds.npy", "numeric", 10, "cc")]
    assert [(r["output"], r["sha256"], r["reference_sha256"])
            for r in artefact_records(mine, theirs)] == [("preds", "aa", "cc"),
                                                         ("note", "bb", None)]


def test_smoke_records_the_files_and_compares_them_with_a_saved_reference(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        smoke: Callable[..., tuple[int, dict | None, str, str]]) -> None:
    folder = tmp_path / "files"
    monkeypatch.setenv("ARTEFACT_DIR", str(folder))
    reference = tmp_path / "ref.safetensors"
    name = target("writes_files.py:predict")
    code, report, _, err = smoke(name, "--device", "cpu", "--save-reference", str(reference))
    assert code == 0 and report is not None, err
    assert [(a["output"], a["compared"], a["sha256"]) for a in report["artefacts"]] == [
        ("predictions", "numeric", _sha(folder / "predictions.npy")),
        ("metrics", "numeric", _sha(folder / "metrics.csv")),
        ("note", "bytes", _sha(folder / "note.txt"))]
    assert (f"files: predictions.npy (numeric, sha256 {_sha(folder / 'predictions.npy')[:12]}), "
            "metrics.csv (numeric, ") in plain(SmokeReport.from_dict(report))

    monkeypatch.setenv("ARTEFACT_SHIFT", "2e-6")
    code, report, _, err = smoke(name, "--device", "cpu", "--reference", str(reference))
    assert code == 0 and check(report, "compare")["status"] == "pass", err

    monkeypatch.setenv("ARTEFACT_SHIFT", "0.5")
    monkeypatch.setenv("ARTEFACT_NOTE", "9 predictions")
    code, report, _, _ = smoke(name, "--device", "cpu", "--reference", str(reference))
    detail = check(report, "compare")["detail"]
    assert code == 1 and "predictions: 24 of 24 elements differ" in detail
    assert "metrics['values']: 8 of 16 elements differ" in detail
    assert "note: '14 bytes, sha256 " in detail

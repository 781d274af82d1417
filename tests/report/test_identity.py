"""`--smoke` takes only smoke reports, and only those that describe the project as it is now
are evidence: a file that is not a smoke report stops the report (exit 2, one line); a run of
another project, of another commit or with changed files is shown as stale and never used."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.runtime.smoke import identity

from .smoke_runs import smoke_json

FIXTURES = Path(__file__).parents[2] / "fixtures" / "report"
READY = FIXTURES / "ready"


def _report(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["report", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _write(folder: Path, name: str, data: object) -> Path:
    path = folder / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_hand_written_verdict_is_not_a_smoke_report(tmp_path: Path, capsys) -> None:
    fake = _write(tmp_path, "fake.json", {"verdict": "pass"})
    code, out, err = _report(capsys, str(READY), "--smoke", str(fake))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith(f"cudalint report: error: {fake}: not a smoke report (no 'schema'")


def test_the_reports_own_json_is_not_a_smoke_report(tmp_path: Path, capsys) -> None:
    own = tmp_path / "decision.json"
    assert _report(capsys, str(READY), "--json", str(own))[0] == 0
    assert "verdict" in json.loads(own.read_text())
    code, out, err = _report(capsys, str(READY), "--smoke", str(own))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and f"{own}: not a smoke report" in err


@pytest.mark.parametrize("data", ["[1, 2]", "{not json", json.dumps(smoke_json() | {
    "schema": "cudalint-smoke/0"}), json.dumps({**smoke_json(), "files": []})])
def test_other_files_are_refused_in_one_line(tmp_path: Path, capsys, data: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(data)
    code, _, err = _report(capsys, str(READY), "--smoke", str(bad))
    assert code == 2 and err.count("\n") == 1 and str(bad) in err


def _stale_case(tmp_path: Path, capsys, run: dict[str, object]) -> dict[str, object]:
    """The JSON decision on the ready project with `run` given, checked in every format."""
    smoke = _write(tmp_path, "smoke-mps.json", run)
    code, out, _ = _report(capsys, str(READY), "--smoke", str(smoke), "--output-format", "json")
    assert code == 0
    data = json.loads(out)
    # No evidence: as if no run had been given.
    assert data["evidence"] == "provisional"
    assert [item["status"] for item in data["checklist"]][2:7] == [
        "unchecked", "unchecked", "unchecked", "unchecked", "open"]
    assert all(cell["status"] == "not run" for row in data["tested"]["rows"]
               for cell in row["cells"].values())
    [entry] = data["smoke"]
    assert entry["current"] is False
    assert any(note["text"].startswith("stale: ") and note["where"] == str(smoke)
               for note in data["notes"])
    for output_format in ("text", "markdown", "html"):
        code, out, _ = _report(capsys, str(READY), "--smoke", str(smoke), "--output-format",
                               output_format)
        assert code == 0 and "stale" in out and entry["stale"][0].split(" (")[0] in out
    return data


def test_a_run_of_another_project_is_stale(tmp_path: Path, capsys) -> None:
    run = smoke_json("mps", root=READY, name="someone-elses-model")
    data = _stale_case(tmp_path, capsys, run)
    assert data["smoke"][0]["stale"] == ["another project ('someone-elses-model', this is "
                                         "'ready')"]


def _git(root: Path, *args: str) -> str:
    """git in `root`; a missing git fails the test (the dev extra's machines have it)."""
    done = subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                           "-c", "commit.gpgsign=false", *args], capture_output=True, text=True,
                          check=True)
    return done.stdout.strip()


@pytest.fixture
def committed(tmp_path: Path) -> Path:
    """The ready project, in a git work tree of its own, committed."""
    root = tmp_path / "ready"
    shutil.copytree(READY, root)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "ready")
    return root


def _stale_in(root: Path, tmp_path: Path, capsys, run: dict[str, object]) -> list[str]:
    smoke = _write(tmp_path, "smoke-mps.json", run)
    code, out, err = _report(capsys, str(root), "--smoke", str(smoke), "--output-format", "json")
    assert code == 0, err
    [entry] = json.loads(out)["smoke"]
    return entry["stale"]


def test_a_run_of_an_older_commit_is_stale(committed: Path, tmp_path: Path, capsys) -> None:
    """Issue 45: staleness by commit, in a work tree the test makes (never skipped)."""
    now = _git(committed, "rev-parse", "HEAD")
    assert identity.project_state(committed)["commit"] == now
    current = smoke_json("mps", root=committed)
    assert _stale_in(committed, tmp_path, capsys, current) == []
    older = smoke_json("mps", root=committed, commit="0" * 40)
    assert _stale_in(committed, tmp_path, capsys, older) == [
        f"an older or other commit (000000000000, now {now[:12]})"]


def test_a_file_deleted_since_the_run_makes_it_stale(committed: Path, tmp_path: Path,
                                                     capsys) -> None:
    """Issue 45: a file the run used that is gone is no current evidence (not only a FIFO)."""
    run = smoke_json("mps", root=committed)
    assert "train.py" in run["files"]
    (committed / "train.py").unlink()
    assert _stale_in(committed, tmp_path, capsys, run) == ["train.py is gone"]


def test_a_skipped_verdict_is_not_a_smoke_report(tmp_path: Path, capsys) -> None:
    """Issue 45, item 4: smoke's verdicts are pass and fail; "skipped" once turned the sheet
    into mps-refused."""
    fake = _write(tmp_path, "run.json", smoke_json("mps", root=READY) | {"verdict": "skipped"})
    code, out, err = _report(capsys, str(READY), "--smoke", str(fake))
    assert (code, out) == (2, "")
    assert err == (f"cudalint report: error: {fake}: not a smoke report (verdict is the string "
                   "'skipped', not one of 'pass', 'fail')\n")


def test_a_run_whose_files_changed_is_stale(tmp_path: Path, capsys) -> None:
    run = smoke_json("mps", root=READY, files={"train.py": "0" * 64})
    data = _stale_case(tmp_path, capsys, run)
    assert data["smoke"][0]["stale"] == ["train.py changed since the run"]


def test_a_current_run_is_evidence(tmp_path: Path, capsys) -> None:
    smoke = _write(tmp_path, "smoke-mps.json", smoke_json("mps", root=READY))
    code, out, _ = _report(capsys, str(READY), "--smoke", str(smoke), "--output-format", "json")
    data = json.loads(out)
    assert (code, data["evidence"]) == (0, "confirmed-on-mps")
    assert (data["smoke"][0]["current"], data["smoke"][0]["stale"]) == (True, [])

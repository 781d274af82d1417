"""`--kill-after N`: SIGKILL during step N+1, a restart from the target's own checkpoint, and
a comparison with the run that was never killed."""

from __future__ import annotations

from .helpers import check, target


def test_an_atomic_save_resumes_and_matches(smoke) -> None:
    code, report, out, _ = smoke(target("checkpointing.py:train"), "--kill-after", "2")
    killed = check(report, "killed")
    assert code == 0, killed
    assert killed["status"] == "pass"
    assert killed["detail"].startswith("killed with SIGKILL as last.pt.tmp was written, after "
                                       "optimizer step 3, restarted from last.pt")
    assert "matches 4 uninterrupted steps" in killed["detail"]
    facts = report["killed"]
    assert facts["kill_after"] == 2 and facts["steps_total"] == 4
    assert "last.pt" in facts["after_kill"] and facts["loaded"] == ["last.pt"]
    assert "PASS     killed" in out


def test_a_save_killed_mid_write_is_a_failure_naming_the_file(smoke, monkeypatch) -> None:
    monkeypatch.setenv("SMOKE_SAVE", "halves")
    code, report, _, _ = smoke(target("checkpointing.py:train"), "--kill-after", "2")
    assert code == 1
    detail = check(report, "killed")["detail"]
    assert detail.startswith("checkpoint last.pt (")
    assert "is partial or corrupt after the kill as last.pt was written" in detail
    assert "the save is not atomic" in detail and "os.replace()" in detail


def test_a_restart_that_ignores_the_checkpoint_fails(smoke, monkeypatch) -> None:
    monkeypatch.setenv("SMOKE_START_OVER", "1")
    code, report, _, _ = smoke(target("checkpointing.py:train"), "--kill-after", "1")
    assert code == 1
    assert "loaded no checkpoint from checkpoint_dir" in check(report, "killed")["detail"]


def test_too_few_steps_and_a_target_without_the_parameters(smoke) -> None:
    code, report, _, _ = smoke(target("checkpointing.py:one_step"), "--kill-after", "2")
    assert code == 1
    assert "returned after fewer than 3 optimizer steps" in check(report, "killed")["detail"]
    code, report, _, err = smoke(target("resumable.py:train"), "--kill-after", "1")
    # Asked for and not carried out: exit 2, the verdict is not pass, the check says why.
    assert code == 2
    assert report["verdict"] == "fail" and report["requested"] == {"killed": "--kill-after 1"}
    assert check(report, "killed")["status"] == "skipped"
    assert "needs `steps` and `checkpoint_dir`" in check(report, "killed")["detail"]
    assert err.splitlines()[-1].startswith(
        "cudalint smoke: error: --kill-after 1 was asked for and not carried out: train needs "
        "`steps` and `checkpoint_dir`")

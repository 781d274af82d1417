"""The headline's scope and the checklist, on the demo and on a real-layout project: "CUDA for
distributed training" only when distributed code needs it; tooling is tooling; a checklist item
is done only with evidence naming what was checked, unknown when there is nothing to check."""

from __future__ import annotations

from pathlib import Path

from cudalint.config import load_config
from cudalint.report.audit import audit
from cudalint.report.decision import SINGLE_DEVICE, TOOLING_ONLY, Verdict, decide
from cudalint.report.paths import PathClass
from cudalint.report.project import describe

ROOT = Path(__file__).parents[2] / "fixtures"


def _decision(folder: Path):
    return decide(audit([folder], load_config(folder), jobs=1), project=describe(folder))


def _statuses(decision) -> dict[str, tuple[str, str]]:
    return {item.title.split(" (")[0]: (item.status.value, item.evidence)
            for item in decision.checklist}


def test_the_demo_needs_cuda_only_in_its_tooling() -> None:
    decision = _decision(ROOT / "demo")
    # Its triggers are a conda pin, a CUDA wheel pin and a SLURM script: no distributed code.
    assert not any(item.path is PathClass.DISTRIBUTED for item in decision.audit.items)
    assert (decision.verdict, decision.scope) == (Verdict.DUAL_TRACK, TOOLING_ONLY)
    assert SINGLE_DEVICE not in decision.headline and "distributed" not in decision.headline
    assert decision.holds_after == ("holds after `cudalint check --fix`, which removes 13 "
                                    "finding(s)")
    assert decision.title == "cudalint migration decision: demo-mlp"
    checklist = _statuses(decision)
    assert [status for status, _ in checklist.values()] == [
        "open", "done", "unchecked", "unchecked", "unchecked", "unchecked", "open", "unchecked"]
    assert checklist["Dependencies install on macOS"][1].startswith("4 CUDA pin(s): ")
    assert checklist["CUDA-only components identified, each with an acceptable alternative"][
        1].startswith("checked 9 file(s)")
    steps = decision.next_steps
    assert steps[0] == "`cudalint check --fix`: removes 13 finding(s)"
    assert ("`cudalint smoke smoke_target.py:train_step --device cpu --reference "
            "references/train_step_h200_cuda.safetensors --json smoke-cpu.json`") in steps
    assert "resume after a save: `cudalint smoke smoke_target.py:train_steps --interrupt 2`" \
        in steps


def test_a_ddp_branch_under_its_flag_is_the_distributed_path() -> None:
    folder = ROOT / "report" / "real_layout"
    decision = _decision(folder)
    paths = {(item.where.rpartition("/")[2], item.finding.code): item.path
             for item in decision.audit.items}
    # `if args.distributed:`: NCCL and device_ids are the distributed path, not main-path work.
    assert paths[("train.py:19", "CUD701")] is PathClass.DISTRIBUTED
    assert paths[("train.py:22", "CUD702")] is PathClass.DISTRIBUTED
    assert paths[("train.py:17", "CUD102")] is PathClass.MAIN  # `.cuda()`: --fix removes it
    assert (decision.verdict, decision.scope) == (Verdict.DUAL_TRACK, SINGLE_DEVICE)
    assert decision.headline == f"dual-track: {SINGLE_DEVICE}"
    assert decision.holds_after is not None and "`cudalint check --fix`" in decision.holds_after
    assert decision.project.name == "real_layout"
    assert decision.project.dependency_files == ()
    checklist = _statuses(decision)
    status, evidence = checklist["Dependencies install on macOS"]
    assert status == "unknown" and evidence.startswith("no dependency file")
    assert [status for status, _ in checklist.values()] == [
        "unknown", "done", "unchecked", "unchecked", "unchecked", "unchecked", "open",
        "unchecked"]
    assert any(step.startswith("write a smoke target: `cudalint smoke --init` writes "
                               "smoke_target.py") and "`cudalint smoke smoke_target.py:"
               "train_step`" in step for step in decision.next_steps)
    # No target in the project: the command to confirm with writes one first, no placeholder.
    assert decision.confirm.startswith("cudalint smoke --init, then cudalint smoke "
                                       "smoke_target.py:train_step --device mps")
    assert any(step.startswith("by hand: Dependencies install on macOS")
               for step in decision.next_steps)


def test_done_names_what_was_checked() -> None:
    decision = _decision(ROOT / "layouts" / "flat_scripts")
    status, evidence = _statuses(decision)["Dependencies install on macOS"]
    assert (status, evidence) == ("done", "checked pyproject.toml: no CUDA pin or CUDA-only "
                                          "package")


def test_the_dependency_files_include_a_conda_environment_named_otherwise(tmp_path: Path) -> None:
    """`cudalint report` lists the environment a check reads CUD401 from, by its content."""
    from cudalint.report.project import dependency_files

    (tmp_path / "requirements.txt").write_text("numpy\n")
    (tmp_path / "gpu_env.yaml").write_text("name: p\nchannels: [nvidia]\n"
                                           "dependencies:\n  - pytorch-cuda=12.1\n")
    (tmp_path / "config.yaml").write_text("lr: 0.1\nepochs: 3\n")
    assert dependency_files(tmp_path) == ("gpu_env.yaml", "requirements.txt")

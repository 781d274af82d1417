"""The training check: a training loop that learns nothing fails it, naming why."""

from __future__ import annotations

import pytest

from .helpers import check, target


@pytest.mark.parametrize(("function", "reason"), [
    ("constant_loss", "constant loss: 0 at each of the 4 steps"),
    ("detached_loss", "zero gradients at every step (the loss reaches no parameter: cut from "
                      "the model's graph): body.0.weight, body.0.bias, body.2.weight, "
                      "body.2.bias, head.weight and 1 more"),
    ("frozen_model", "frozen weights: 4 step(s) changed no value of body.0.weight"),
    ("nan_at_step_2", "NaN loss at step 2 (of 4)"),
])
def test_a_training_that_learns_nothing_fails(smoke, function: str, reason: str) -> None:
    code, report, _, _ = smoke(target(f"trainers.py:{function}"))
    training = check(report, "training")
    assert training["status"] == "fail", training
    assert reason in training["detail"]
    assert training["detail"].startswith("4 SGD step(s) over 6 parameter(s) of TinyNet: ")
    assert code == 1 and report["verdict"] == "fail"
    assert check(report, "run")["status"] in ("pass", "warn")


def test_a_healthy_training_passes(smoke) -> None:
    code, report, _, _ = smoke(target("trainers.py:healthy"))
    training = check(report, "training")
    assert training["status"] == "pass", training
    assert training["detail"].endswith("every parameter it reaches got a gradient and changed")
    section = report["training"]
    assert section["steps"] == 4 and section["optimizer"] == "SGD"
    losses = section["losses"]
    assert len(losses) == 4 and losses[-1] < losses[0]
    assert code == 0
    # The hooks' reads are not the target's ops.
    assert "aten::clone" not in report["ops"]["counts"]
    assert "aten::equal" not in report["ops"]["counts"]


def test_a_reference_carries_the_losses_and_a_run_is_held_to_them(
        smoke, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = str(tmp_path / "ref.safetensors")
    assert smoke(target("trainers.py:healthy"), "--save-reference", reference)[0] == 0
    code, report, _, _ = smoke(target("trainers.py:healthy"), "--reference", reference)
    assert code == 0
    assert report["training"]["reference_losses"] == report["training"]["losses"]
    assert check(report, "training")["detail"].endswith("; matches the reference's 4 losses")
    monkeypatch.setenv("SMOKE_LR", "0.2")  # the first loss is the same, the later ones not
    code, report, _, _ = smoke(target("trainers.py:healthy"), "--reference", reference)
    assert code == 1
    assert "loss at step 2: " in check(report, "training")["detail"]
    assert " in the reference (beyond rtol 1.3e-06, atol 1e-05)" in check(
        report, "training")["detail"]


def test_parameters_the_loss_does_not_reach_are_named_not_failed(smoke) -> None:
    code, report, _, _ = smoke(target("trainers.py:spare_head"))
    training = check(report, "training")
    assert code == 0 and training["status"] == "pass"
    assert training["detail"].endswith("; the loss reaches none of 2 parameter(s): spare.weight, "
                                       "spare.bias")
    assert " of WithSpareHead: " in training["detail"]


def test_inference_trains_nothing(smoke) -> None:
    code, report, _, _ = smoke(target("trainers.py:inference"))
    assert check(report, "training")["status"] == "skipped"
    assert "training" not in report
    assert code == 0


def test_an_optimizer_made_after_another_was_freed_is_a_run_of_its_own() -> None:
    """The demo's pattern: one-step trainings with throw-away optimizers, then two steps with
    another. CPython gives a new optimizer a freed one's id; they are not one run of many
    steps (keyed by id, the demo's loss chart showed 3 steps where its training ran 2)."""
    import torch
    from torch import nn

    from cudalint.runtime.smoke.training import TrainingWatch, summary

    torch.manual_seed(0)
    x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))

    def train(model: nn.Module, optimizer: torch.optim.Optimizer, steps: int) -> None:
        for _ in range(steps):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()

    models = [nn.Linear(4, 2) for _ in range(6)]
    with TrainingWatch() as watch:
        for model in models[:5]:  # each optimizer freed as its training returns
            train(model, torch.optim.AdamW(model.parameters(), lr=0.1), 1)
        train(models[5], torch.optim.AdamW(models[5].parameters(), lr=0.1), 2)
    assert sorted(len(run.steps) for run in watch.runs.values()) == [1, 1, 1, 1, 1, 2]
    assert summary(watch)["steps"] == 2  # type: ignore[index]

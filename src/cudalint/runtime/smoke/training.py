"""The training check: does the target's training train?

While the target runs, `TrainingWatch` sees every `backward()` (through `torch.autograd.backward`,
which `Tensor.backward` calls: the loss's value, and the parameters its graph reaches) and every
`step()` of a `torch.optim` optimizer (through torch's global step hooks: each trainable
parameter's gradient before the step, and whether the step changed it). Module forward hooks
give the parameters their names. The training examined is that of the optimizer that stepped
most often: a target trains one model a few steps on one fixed batch, and per step

- the loss is finite (else: NaN or infinity, at which step),
- every parameter the loss reaches gets a non-zero gradient (all of them when it reaches none:
  a loss cut from the model's graph),
- the step changes the parameters that got one (else: frozen weights),
- and over the steps the loss is not constant and goes down: overfitting one batch is the
  cheapest proof that training works.

The hooks run outside the op audit's dispatch mode, so that what they read is not counted as
the target's ops.
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes

from cudalint.runtime.smoke.compare import Tolerance, json_number
from cudalint.runtime.smoke.report import Check, Status

NAME = "training"
_SHOWN = 5
NONE, ZERO, NONFINITE, OK = "none", "zero", "nonfinite", "ok"


@dataclass
class Step:
    loss: float | None  # the mean of the losses backward() ran on since the last step
    grads: dict[int, str]  # parameter id -> NONE, ZERO, NONFINITE or OK
    reached: set[int]  # the parameters the losses' graphs reached
    changed: set[int] = field(default_factory=set)


@dataclass
class Run:
    """One optimizer's steps."""

    optimizer: str
    params: list[int]  # ids of its trainable parameters, in order
    names: dict[int, str]
    model: str | None
    steps: list[Step] = field(default_factory=list)


class TrainingWatch:
    """Records the target's training; `runs` by optimizer, `backwards` counts every backward."""

    def __init__(self) -> None:
        self.runs: dict[int, Run] = {}
        # Each optimizer's run, by a number of its own: an id alone would join the steps of
        # an optimizer made after another was freed (the demo's two) into one run.
        self._keys: weakref.WeakKeyDictionary[torch.optim.Optimizer, int] = \
            weakref.WeakKeyDictionary()
        self._made = itertools.count()
        self.backwards = 0
        self._pending: list[float] = []
        self._reached: set[int] = set()
        self._snapshots: dict[int, torch.Tensor] = {}
        self._modules: weakref.WeakSet[torch.nn.Module] = weakref.WeakSet()
        self._handles: list[Any] = []
        self._backward: Any = None

    def __enter__(self) -> TrainingWatch:
        from torch.nn.modules.module import register_module_forward_hook
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        self._backward = torch.autograd.backward
        original = self._backward

        def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            self._safely(self._on_backward, tensors)
            return original(tensors, *args, **kwargs)

        torch.autograd.backward = backward  # type: ignore[assignment]
        self._handles = [register_optimizer_step_pre_hook(self._pre_step),
                         register_optimizer_step_post_hook(self._post_step),
                         register_module_forward_hook(self._on_forward)]
        return self

    def __exit__(self, *exc: object) -> None:
        torch.autograd.backward = self._backward
        for handle in self._handles:
            handle.remove()
        self._snapshots.clear()
        self._modules = weakref.WeakSet()

    def _safely(self, function: Any, *args: Any) -> None:
        """The watch must never break the target's training."""
        try:
            with _disable_current_modes(), torch.no_grad():
                function(*args)
        except Exception:  # an unreadable loss is no loss for the check
            pass

    def _on_forward(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        self._modules.add(module)

    def _on_backward(self, tensors: Any) -> None:
        self.backwards += 1
        first = tensors if isinstance(tensors, torch.Tensor) else next(iter(tensors), None)
        if not isinstance(first, torch.Tensor):
            return
        if first.numel() == 1:
            self._pending.append(float(first.detach().float().cpu()))
        self._reached |= _reached_parameters(first)

    def _pre_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self._safely(self._record_step, optimizer)

    def _record_step(self, optimizer: torch.optim.Optimizer) -> None:
        params = [p for group in optimizer.param_groups for p in group["params"]
                  if isinstance(p, torch.Tensor) and p.requires_grad]
        key = self._keys.get(optimizer)
        if key is None:
            key = self._keys[optimizer] = next(self._made)
        run = self.runs.get(key)
        if run is None:
            names, model = self._names(params)
            run = Run(type(optimizer).__name__, [id(p) for p in params], names, model)
            self.runs[key] = run
        loss = sum(self._pending) / len(self._pending) if self._pending else None
        run.steps.append(Step(loss, {id(p): _grad_state(p.grad) for p in params},
                              self._reached & set(run.params)))
        self._pending, self._reached = [], set()
        self._snapshots = {id(p): p.detach().clone() for p in params}

    def _post_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self._safely(self._record_change, optimizer)

    def _record_change(self, optimizer: torch.optim.Optimizer) -> None:
        key = self._keys.get(optimizer)
        run = None if key is None else self.runs.get(key)
        if run is None or not run.steps:
            return
        step = run.steps[-1]
        for group in optimizer.param_groups:
            for p in group["params"]:
                before = self._snapshots.get(id(p))
                if before is not None and not torch.equal(before, p.detach()):
                    step.changed.add(id(p))
        self._snapshots.clear()

    def _names(self, params: list[torch.Tensor]) -> tuple[dict[int, str], str | None]:
        """Each parameter's name in the largest module that holds it, and that module's class."""
        wanted = {id(p) for p in params}
        names: dict[int, str] = {}
        best: tuple[int, str] | None = None
        for module in list(self._modules):
            held = {id(p): name for name, p in module.named_parameters() if id(p) in wanted}
            for key, name in held.items():
                if len(name) > len(names.get(key, "")):
                    names[key] = name
            if held and (best is None or len(held) > best[0]):
                best = (len(held), type(module).__name__)
        for index, p in enumerate(params):
            names.setdefault(id(p), f"parameter {index} {tuple(p.shape)}")
        return names, best[1] if best else None


def _grad_state(grad: torch.Tensor | None) -> str:
    if grad is None:
        return NONE
    if grad.is_sparse:
        grad = grad.coalesce().values()
    if grad.numel() and not bool(torch.isfinite(grad).all()):
        return NONFINITE
    return OK if bool((grad != 0).any()) else ZERO


def _reached_parameters(loss: torch.Tensor) -> set[int]:
    """The ids of the leaf tensors the loss's autograd graph reaches."""
    found: set[int] = set()
    seen: set[int] = set()
    stack: list[Any] = [loss.grad_fn] if loss.grad_fn is not None else []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            found.add(id(variable))
        stack.extend(next_node for next_node, _ in node.next_functions)
    return found


# -- the check --------------------------------------------------------------------------------


def summary(watch: TrainingWatch) -> dict[str, Any] | None:
    """The report's `training` section: the run examined (the optimizer that stepped most)."""
    run = _main_run(watch)
    if run is None:
        return None
    losses = [step.loss for step in run.steps]
    return {"optimizer": run.optimizer, "model": run.model, "parameters": len(run.params),
            "steps": len(run.steps), "backwards": watch.backwards,
            "losses": [json_number(loss) for loss in losses]}


def _main_run(watch: TrainingWatch) -> Run | None:
    if not watch.runs:
        return None
    return max(reversed(list(watch.runs.values())), key=lambda run: len(run.steps))


def training_check(watch: TrainingWatch, reference: list[float | None] | None = None,
                   tolerance: Tolerance | None = None) -> Check:
    """Pass, warn (one step only, or updates torch.optim does not make) or fail, naming why."""
    run = _main_run(watch)
    if run is None:
        if watch.backwards:
            return Check(NAME, Status.WARN, f"backward() ran {watch.backwards} time(s) but no "
                         "torch.optim optimizer stepped: the updates are not seen (frozen "
                         "weights, or an update written by hand)")
        return Check(NAME, Status.SKIPPED, "the target trained nothing (no backward() and no "
                     "optimizer step): a training target computes a loss, calls backward() "
                     "and steps an optimizer, a few steps on one fixed batch")
    problems = _problems(run)
    losses = [step.loss for step in run.steps]
    if reference is not None:
        problems += _against_reference(losses, reference, tolerance or Tolerance())
    described = _described(run)
    if problems:
        return Check(NAME, Status.FAIL, f"{described}: {'; '.join(problems)}")
    if len(run.steps) < 2:
        return Check(NAME, Status.WARN, f"{described}: one optimizer step, so whether the loss "
                     "goes down is not shown: train two or more steps on one batch")
    compared = (f"; matches the reference's {len(reference)} losses" if reference is not None
                else "")
    return Check(NAME, Status.PASS, f"{described}: loss {_curve(losses)}, every parameter it "
                 f"reaches got a gradient and changed{compared}{_unreached(run)}")


def _unreached(run: Run) -> str:
    """The optimizer's parameters the loss never reaches (a head this loss does not use): not
    a failure, but worth knowing."""
    reached = set().union(*(step.reached for step in run.steps))
    missing = [key for key in run.params if key not in reached]
    if not reached or not missing:
        return ""
    return f"; the loss reaches none of {len(missing)} parameter(s): {_names(run, missing)}"


def _described(run: Run) -> str:
    model = f" of {run.model}" if run.model else ""
    return (f"{len(run.steps)} {run.optimizer} step(s) over {len(run.params)} "
            f"parameter(s){model}")


def _problems(run: Run) -> list[str]:
    steps = run.steps
    for index, step in enumerate(steps, 1):
        if step.loss is not None and not math.isfinite(step.loss):
            return [f"{_nan(step.loss)} loss at step {index} (of {len(steps)})"]
        bad = [key for key, state in step.grads.items() if state == NONFINITE]
        if bad:
            return [f"NaN or infinity in the gradient at step {index}: {_names(run, bad)}"]
    problems = []
    reached = set().union(*(step.reached for step in steps))
    should = [key for key in run.params if key in reached] if reached else list(run.params)
    zero = [key for key in should if all(step.grads.get(key) != OK for step in steps)]
    if zero:
        how = "" if reached else " (the loss reaches no parameter: cut from the model's graph)"
        problems.append(f"zero gradients at every step{how}: {_names(run, zero)}")
    graded = [key for key in run.params if any(step.grads.get(key) == OK for step in steps)]
    frozen = [key for key in graded if not any(key in step.changed for step in steps)]
    if frozen:
        problems.append(f"frozen weights: {len(steps)} step(s) changed no value of "
                        f"{_names(run, frozen)}")
    losses = [step.loss for step in steps if step.loss is not None]
    if len(losses) >= 2 and len(set(losses)) == 1:
        problems.append(f"constant loss: {losses[0]:.6g} at each of the {len(losses)} steps")
    elif len(losses) >= 2 and not losses[-1] < losses[0]:
        problems.append(f"the loss did not go down over {len(losses)} steps on one batch: "
                        f"{_curve(losses)}")
    return problems


def _against_reference(losses: list[float | None], reference: list[float | None],
                       tolerance: Tolerance) -> list[str]:
    if len(losses) != len(reference):
        return [f"{len(losses)} step(s) here, {len(reference)} in the reference"]
    rtol, atol = tolerance.for_path("loss").for_dtypes("float32")
    for index, (got, want) in enumerate(zip(losses, reference, strict=True), 1):
        if got is None or want is None:
            continue
        if not abs(got - want) <= atol + rtol * abs(want):
            return [f"loss at step {index}: {got:.7g} here, {want:.7g} in the reference "
                    f"(beyond rtol {rtol:g}, atol {atol:g})"]
    return []


def _curve(losses: Iterable[float | None]) -> str:
    shown = [f"{loss:.4g}" if loss is not None else "?" for loss in losses]
    if len(shown) > 6:
        shown = [*shown[:3], "...", *shown[-2:]]
    return " → ".join(shown)


def _names(run: Run, keys: list[int]) -> str:
    names = [run.names.get(key, "?") for key in keys]
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def _nan(value: float) -> str:
    return "NaN" if math.isnan(value) else "infinite"


def losses_of(section: dict[str, Any] | None) -> list[float | None] | None:
    """The per-step losses of a report's or a reference's `training` section."""
    if not isinstance(section, dict) or not isinstance(section.get("losses"), list):
        return None
    return [None if value is None else float(value) for value in section["losses"]]

"""`--interrupt N`: repeat the run after a deliberate interruption, as the guides ask.

The target takes `steps` and `resume` parameters: `target(device, steps=S)` trains S steps
from scratch and returns its state (a dict of state_dicts, tensors and numbers: the checkpoint);
`target(device, steps=S, resume=state)` continues from that state up to step S. The harness:

1. runs 2N steps without a break (the reference);
2. runs N steps and saves what they return with `torch.save`;
3. in a fresh process, loads it with `torch.load(map_location="cpu", weights_only=True)` and
   runs up to step 2N from it;
4. compares the two final outputs within the tolerance.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from cudalint.runtime.smoke.compare import Tolerance, compare_outputs, summarize
from cudalint.runtime.smoke.outputs import Leaf, UnsupportedOutput, flatten
from cudalint.runtime.smoke.report import Check, Status
from cudalint.runtime.smoke.target import Target, parameters, run_target

NAME = "interrupted"
_NEEDED = frozenset({"steps", "resume"})
RESUME_TIMEOUT = 600.0


def interrupted_check(target: Target, device: torch.device, steps: int,
                      tolerance: Tolerance) -> tuple[Check, dict[str, Any]]:
    missing = _NEEDED - parameters(target)
    if missing:
        return Check(NAME, Status.SKIPPED, f"{target.spec.function} needs `steps` and `resume` "
                     f"parameters to be interrupted (missing: {', '.join(sorted(missing))})"), {}
    facts: dict[str, Any] = {"steps_before": steps, "steps_total": 2 * steps}
    whole = _leaves(target, device, {"steps": 2 * steps})
    first = run_target(target, device, {"steps": steps})
    if isinstance(whole, str):
        return Check(NAME, Status.FAIL,
                     f"the uninterrupted run of {2 * steps} steps: {whole}"), facts
    if first.crash is not None:
        return Check(NAME, Status.FAIL, f"the first {steps} steps: {first.crash.summary()}"), facts
    with tempfile.TemporaryDirectory(prefix="cudalint-interrupt-") as folder:
        checkpoint, resumed_path = Path(folder) / "checkpoint.pt", Path(folder) / "resumed.pt"
        try:
            torch.save(_to_cpu(first.output), checkpoint)
        except Exception as exc:
            return Check(NAME, Status.FAIL, f"torch.save of what {steps} steps returned failed: "
                         f"{type(exc).__name__}: {exc}"), facts
        facts["checkpoint_bytes"] = checkpoint.stat().st_size
        failure = _resume(target, device, 2 * steps, checkpoint, resumed_path)
        if failure:
            return Check(NAME, Status.FAIL, f"resuming in a fresh process: {failure}"), facts
        resumed = [Leaf(path, value) for path, value in torch.load(resumed_path,
                                                                   weights_only=True)]
    where = (f"{steps} steps, checkpoint ({facts['checkpoint_bytes']} bytes), reloaded in a "
             f"fresh process, {steps} more")
    return resumed_check(NAME, where, resumed, whole, 2 * steps, tolerance), facts


def resumed_check(name: str, where: str, resumed: list[Leaf], whole: list[Leaf], total: int,
                  tolerance: Tolerance) -> Check:
    """The check of a resumed run's outputs against those of `total` uninterrupted steps;
    `where` says how it was interrupted and resumed."""
    problems = compare_outputs(resumed, whole, tolerance)
    if problems:
        return Check(name, Status.FAIL, f"{where}: differs from {total} uninterrupted steps: "
                     f"{summarize(problems)}")
    return Check(name, Status.PASS, f"{where}: matches {total} uninterrupted steps within "
                 f"tolerance ({len(whole)} outputs)")


def _leaves(target: Target, device: torch.device, overrides: dict[str, Any]) -> list[Leaf] | str:
    outcome = run_target(target, device, overrides)
    if outcome.crash is not None:
        return outcome.crash.summary()
    try:
        return flatten(outcome.output)
    except UnsupportedOutput as exc:
        return str(exc)


def _to_cpu(value: Any) -> Any:
    if isinstance(value, torch.nn.Module):
        return _to_cpu(value.state_dict())
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu")
    if isinstance(value, dict):
        return type(value)((key, _to_cpu(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(item) for item in value)
    return value


def _resume(target: Target, device: torch.device, steps: int, checkpoint: Path,
            out: Path) -> str | None:
    """Run the resumed half in a fresh process; why it failed, or None."""
    from cudalint.runtime.smoke.isolation import run_process

    command = [sys.executable, "-m", "cudalint.runtime.smoke.interrupt", target.spec.text,
               str(device), str(steps), str(checkpoint), str(out)]
    returncode, output = run_process(command, RESUME_TIMEOUT)
    if returncode is None:
        return f"did not finish within {RESUME_TIMEOUT:g} s"
    if returncode == 0 and out.is_file():
        return None
    lines = output.strip().splitlines()
    return lines[-1] if lines else f"exited with status {returncode}"


def resume_main(argv: list[str]) -> int:
    """The fresh process: load the target and the checkpoint, run to `steps`, save the leaves."""
    from cudalint.runtime.smoke.target import load_target, parse_target

    target_text, device_text, steps, checkpoint, out = argv
    try:
        target = load_target(parse_target(target_text))
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    except Exception as exc:  # TargetCrashed, HarnessError, an unreadable checkpoint
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    outcome = run_target(target, torch.device(device_text), {"steps": int(steps),
                                                             "resume": state})
    if outcome.crash is not None:
        print(outcome.crash.summary(), file=sys.stderr)
        return 1
    torch.save([(leaf.path, leaf.value) for leaf in flatten(outcome.output)], out)
    return 0


if __name__ == "__main__":
    raise SystemExit(resume_main(sys.argv[1:]))

"""`--kill-after N`: a real interruption. The training is killed with SIGKILL during step N+1,
restarted from the checkpoint that its own save code wrote, and compared with a run that was
never interrupted.

The target takes `steps` and `checkpoint_dir`: `target(device, steps=S, checkpoint_dir=DIR)`
resumes from the latest checkpoint in DIR when there is one (its own load code, through
`torch.load`), trains up to step S, saving into DIR as it goes (its own save code), and returns
its final state. The harness:

1. runs 2N steps in one go, with a checkpoint folder of their own (the reference);
2. runs 2N steps in a child process with a fresh folder; a step is one `optimizer.step()` of a
   torch optimizer, and after the (N+1)-th a thread inside the child watches the folder and
   kills the process with SIGKILL the moment a file there is written to: in the middle of the
   save that follows step N+1 (or at the next optimizer step, or when the target returns, if it
   saves nothing after step N+1);
3. runs 2N steps again in a fresh process, on the same folder: the target resumes from what
   survived the kill; every `torch.load` of a file in the folder is recorded;
4. fails naming the file when the resume cannot read a checkpoint (a save that is not atomic,
   killed mid-write, leaves it partial), or when it loaded none (it started over); else
   compares the final outputs with the uninterrupted run within the tolerance.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from cudalint.runtime.smoke.compare import Tolerance
from cudalint.runtime.smoke.interrupt import resumed_check
from cudalint.runtime.smoke.outputs import Leaf, UnsupportedOutput, flatten
from cudalint.runtime.smoke.report import Check, Status
from cudalint.runtime.smoke.target import Target, parameters, run_target

NAME = "killed"
_NEEDED = frozenset({"steps", "checkpoint_dir"})
CHILD_TIMEOUT = 600.0
_POLL = 0.0005  # seconds between two looks at the checkpoint folder
_ATOMIC = ("write the checkpoint to a temporary file in the same folder, then os.replace() it "
           "over the old one")


def killed_check(target: Target, device: torch.device, steps: int,
                 tolerance: Tolerance) -> tuple[Check, dict[str, Any]]:
    missing = _NEEDED - parameters(target)
    if missing:
        return Check(NAME, Status.SKIPPED, f"{target.spec.function} needs `steps` and "
                     "`checkpoint_dir` parameters to be killed and restarted (missing: "
                     f"{', '.join(sorted(missing))})"), {}
    total = 2 * steps
    facts: dict[str, Any] = {"kill_after": steps, "steps_total": total}
    with tempfile.TemporaryDirectory(prefix="cudalint-kill-") as folder:
        whole = _leaves(target, device, {"steps": total,
                                          "checkpoint_dir": str(Path(folder) / "uninterrupted")})
        if isinstance(whole, str):
            return Check(NAME, Status.FAIL,
                         f"the uninterrupted run of {total} steps: {whole}"), facts
        checkpoints = Path(folder) / "checkpoints"
        checkpoints.mkdir()
        out = Path(folder) / "resumed.json"
        failure = _killed_run(target, device, total, steps, checkpoints, out, facts)
        if failure:
            return Check(NAME, Status.FAIL, failure), facts
        facts["after_kill"] = _listing(checkpoints)
        if not facts["after_kill"]:
            return Check(NAME, Status.FAIL, f"killed during step {steps + 1}, the target had "
                         "saved nothing into checkpoint_dir: its own save code must write "
                         "there"), facts
        failure = _resumed_run(target, device, total, checkpoints, out, facts)
        if failure:
            return Check(NAME, Status.FAIL, failure), facts
        resumed = [Leaf(path, value) for path, value in
                   torch.load(out.with_suffix(".pt"), weights_only=True)]
    loaded = ", ".join(facts["loaded"])
    where = (f"killed with SIGKILL {facts['killed_at']}, restarted from {loaded} in a fresh "
             "process")
    return resumed_check(NAME, where, resumed, whole, total, tolerance), facts


def _leaves(target: Target, device: torch.device, overrides: dict[str, Any]) -> list[Leaf] | str:
    Path(overrides["checkpoint_dir"]).mkdir(parents=True, exist_ok=True)
    outcome = run_target(target, device, overrides)
    if outcome.crash is not None:
        return outcome.crash.summary()
    try:
        return flatten(outcome.output)
    except UnsupportedOutput as exc:
        return str(exc)


def _listing(folder: Path) -> dict[str, int]:
    """Every file under `folder` (posix path relative to it) with its size."""
    return {path.relative_to(folder).as_posix(): path.stat().st_size
            for path in sorted(folder.rglob("*")) if path.is_file()}


def _child(mode: str, target: Target, device: torch.device, total: int, extra: str,
           checkpoints: Path, out: Path) -> tuple[int, str] | str:
    """(exit status, output) of the child, or why it did not finish."""
    from cudalint.runtime.smoke.isolation import run_process

    command = [sys.executable, "-m", "cudalint.runtime.smoke.kill", mode, target.spec.text,
               str(device), str(total), extra, str(checkpoints), str(out)]
    returncode, output = run_process(command, CHILD_TIMEOUT)
    if returncode is None:
        return f"did not finish within {CHILD_TIMEOUT:g} s"
    return returncode, output


def _last_line(result: tuple[int, str]) -> str:
    lines = result[1].strip().splitlines()
    return lines[-1] if lines else f"exited with status {result[0]}"


def _killed_run(target: Target, device: torch.device, total: int, steps: int,
                checkpoints: Path, out: Path, facts: dict[str, Any]) -> str | None:
    result = _child("kill", target, device, total, str(steps), checkpoints, out)
    if isinstance(result, str):
        return f"the run to be killed {result}"
    note = out.with_suffix(".kill")
    facts["killed_at"] = note.read_text(encoding="utf-8") if note.is_file() else None
    if result[0] == -signal.SIGKILL and facts["killed_at"]:
        return None
    if result[0] == 0:
        return (f"the target returned after fewer than {steps + 1} optimizer steps, before it "
                f"could be killed (--kill-after counts `optimizer.step()` calls)")
    return f"the run to be killed failed before step {steps + 1}: {_last_line(result)}"


def _resumed_run(target: Target, device: torch.device, total: int, checkpoints: Path,
                 out: Path, facts: dict[str, Any]) -> str | None:
    result = _child("resume", target, device, total, "-", checkpoints, out)
    if isinstance(result, str):
        return f"the restarted run {result}"
    record = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    facts["loaded"] = loaded = record.get("loaded", [])
    broken = record.get("unreadable")
    if broken:
        name, error = broken
        size = facts["after_kill"].get(name)
        return (f"checkpoint {name} ({size} bytes) is partial or corrupt after the kill "
                f"{facts['killed_at']}: {error}; the save is not atomic: {_ATOMIC}")
    if result[0] != 0:
        return f"the restarted run: {_last_line(result)}"
    if not loaded:
        return (f"the restarted run loaded no checkpoint from checkpoint_dir (it holds "
                f"{', '.join(facts['after_kill'])}): it started over instead of resuming")
    return None


# The child processes.

def _watch_and_kill(folder: Path, after: int, note: Path) -> Callable[[], None]:
    """Count optimizer steps; after step `after + 1`, kill this process with SIGKILL at the
    first write into `folder`, or at the next optimizer step. Returns what to call when the
    target returns (kill then, if not yet)."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    count = 0
    armed = threading.Event()
    # The folder as step N+1's optimizer step left it, taken in the training thread itself, so
    # that a save that starts before the watcher wakes is still a change.
    before: dict[str, tuple[int, int]] = {}

    def kill(where: str) -> None:
        note.write_text(where, encoding="utf-8")
        os.kill(os.getpid(), signal.SIGKILL)

    def changed() -> list[str]:
        now = _snapshot(folder)
        return sorted(name for name in now.keys() | before.keys()
                      if now.get(name) != before.get(name))

    def watch() -> None:
        armed.wait()
        while True:
            if names := changed():
                kill(f"as {names[0]} was written, after optimizer step {after + 1}")
            time.sleep(_POLL)

    def on_step(*_: object) -> None:
        nonlocal count
        count += 1
        if count == after + 1:
            before.update(_snapshot(folder))
            armed.set()
        elif count == after + 2:
            names = changed()
            kill(f"as {names[0]} was written, after optimizer step {after + 1}" if names else
                 f"at optimizer step {count}: nothing was written to checkpoint_dir after step "
                 f"{after + 1}")

    threading.Thread(target=watch, daemon=True).start()
    register_optimizer_step_post_hook(on_step)

    def returned() -> None:
        if armed.is_set():
            kill(f"as the target returned, after optimizer step {after + 1}")

    return returned


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(dirpath, name)
            try:
                stat = os.stat(path)
            except OSError:
                continue
            found[os.path.relpath(path, folder)] = (stat.st_size, stat.st_mtime_ns)
    return found


def _record_loads(folder: Path, record: dict[str, Any]) -> None:
    """Wrap torch.load: note each file in `folder` that the target loads, and the first one it
    could not read."""
    original = torch.load
    root = folder.resolve()

    def load(f: Any, *args: Any, **kwargs: Any) -> Any:
        name = _inside(f, root)
        try:
            value = original(f, *args, **kwargs)
        except Exception as exc:
            if name is not None and "unreadable" not in record:
                message = str(exc).strip().splitlines()
                record["unreadable"] = [name, type(exc).__name__ + (f": {message[0]}"
                                                                    if message else "")]
            raise
        if name is not None and name not in record["loaded"]:
            record["loaded"].append(name)
        return value

    torch.load = load  # type: ignore[assignment]


def _inside(f: Any, root: Path) -> str | None:
    raw = f if isinstance(f, (str, os.PathLike)) else getattr(f, "name", None)
    if not isinstance(raw, (str, os.PathLike)):
        return None
    try:
        return Path(raw).resolve().relative_to(root).as_posix()
    except ValueError:
        return None


def child_main(argv: list[str]) -> int:
    from cudalint.runtime.smoke.target import load_target, parse_target

    mode, target_text, device_text, total, after, folder_text, out_text = argv
    folder, out = Path(folder_text), Path(out_text)
    record: dict[str, Any] = {"loaded": []}
    returned: Callable[[], None] | None = None
    if mode == "resume":
        _record_loads(folder, record)  # before the target's module binds torch.load
    try:
        target = load_target(parse_target(target_text))
    except Exception as exc:  # TargetCrashed, HarnessError
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if mode == "kill":
        returned = _watch_and_kill(folder, int(after), out.with_suffix(".kill"))
    outcome = run_target(target, torch.device(device_text),
                         {"steps": int(total), "checkpoint_dir": str(folder)})
    if returned is not None:
        returned()
    out.write_text(json.dumps(record), encoding="utf-8")
    if outcome.crash is not None:
        print(outcome.crash.summary(), file=sys.stderr)
        return 1
    if mode == "resume":
        torch.save([(leaf.path, leaf.value) for leaf in flatten(outcome.output)],
                   out.with_suffix(".pt"))
    return 0


if __name__ == "__main__":
    raise SystemExit(child_main(sys.argv[1:]))

"""`cudalint smoke TARGET [...]`: exit 0 when every check passed, 1 when one failed (a crash of
the target included), 2 when the harness could not run, with a one-line message."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cudalint.runtime.smoke.errors import HarnessError
from cudalint.runtime.smoke.isolation import DEFAULT_TIMEOUT, WORKER_FLAG

if TYPE_CHECKING:
    import torch

    from cudalint.runtime.smoke.compare import Tolerance
    from cudalint.runtime.smoke.crash import Crash
    from cudalint.runtime.smoke.environment import TorchImportWatch
    from cudalint.runtime.smoke.isolation import ChildResult
    from cudalint.runtime.smoke.pipeline import SmokeOptions
    from cudalint.runtime.smoke.reference import Reference
    from cudalint.runtime.smoke.report import SmokeReport
    from cudalint.runtime.smoke.signals import Held
    from cudalint.runtime.smoke.static import StaticCheck
    from cudalint.runtime.smoke.target import Target, TargetSpec

PROG = "cudalint smoke"
TORCH_MISSING = f"{PROG}: error: torch is not installed; pip install 'cudalint[smoke]'"


def build_parser() -> argparse.ArgumentParser:
    from cudalint.usage import OneLineParser

    parser = OneLineParser(
        prog=PROG,
        description="Run a function of your project on MPS or CPU and compare it with CPU or "
                    "with outputs saved on the CUDA server.",
        allow_abbrev=False,
    )
    parser.add_argument("target", metavar="TARGET", nargs="?",
                        help="path/to/file.py:function or package.module:function; the "
                             "function takes a torch.device (with --init: the file to write)")
    parser.add_argument("--init", action="store_true",
                        help="write a target (TARGET, default smoke_target.py) from a reading "
                             "of the project, its guesses marked '# GUESS: confirm'")
    parser.add_argument("--force", action="store_true",
                        help="with --init: overwrite the file when it exists")
    parser.add_argument("--device", choices=("auto", "mps", "cpu", "cuda"), default="auto",
                        help="auto: MPS on a Mac, else CPU (CUDA only when asked for)")
    parser.add_argument("--reference", metavar="cpu|PATH",
                        help="compare with the same run on CPU (the default, unless saving a "
                             "reference) or with outputs saved by --save-reference")
    parser.add_argument("--save-reference", type=Path, metavar="PATH",
                        help="save this run's outputs, e.g. on the CUDA server")
    parser.add_argument("--rtol", type=_tolerance,
                        help="relative tolerance (default: per dtype)")
    parser.add_argument("--atol", type=_tolerance,
                        help="absolute tolerance (default: per dtype)")
    parser.add_argument("--repeat", type=_count, default=0, metavar="N",
                        help="run N more times with the same seed to check determinism")
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON ('-': "
                                                        "stdout instead of the table)")
    parser.add_argument("--allow-fallback", action="store_true",
                        help="on MPS, report CPU fallbacks and mixed-device ops as warnings")
    parser.add_argument("--batch-sizes", type=_sizes, default=(), metavar="1,8,32",
                        help="also run at each batch size (the target takes batch_size): peak "
                             "memory and time of each, up to the first out-of-memory")
    parser.add_argument("--interrupt", type=_count, default=0, metavar="N",
                        help="also run N steps, checkpoint, resume in a fresh process for N more "
                             "and compare with 2N steps in one go (the target takes steps and "
                             "resume)")
    parser.add_argument("--kill-after", type=_steps, default=0, metavar="N",
                        help="also kill the training with SIGKILL during step N+1, restart it "
                             "from the checkpoint its own save code wrote and compare with an "
                             "uninterrupted run (the target takes steps and checkpoint_dir)")
    parser.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help="stop a target that runs longer (default %(default)g); a failed run")
    parser.add_argument("--in-process", action="store_true",
                        help="run the target in this process (for a debugger): no timeout, and "
                             "a target that exits or crashes the interpreter ends the harness")
    parser.add_argument(WORKER_FLAG, dest="worker_json", help=argparse.SUPPRESS)
    return parser


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of sizes like 1,8,32") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("sizes are whole numbers from 1 up, like 1,8,32")
    return sizes


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def _tolerance(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError("must be a finite number from 0 up")
    return value


def _steps(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more (the steps before the kill)")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def main(argv: Sequence[str] | None = None, static: StaticCheck | None = None) -> int:
    """`static`: the CUD6 check of the files a run used, whose file:line findings join the
    hazards (`cudalint.commands.smoke` hands it in; a worker goes without)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # argparse has printed usage and the error
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.worker_json:  # the parent holds the stopping signals; the target must get them
        from cudalint.runtime.smoke.signals import release

        release()
    if args.init or args.target is None:
        return _init(args)
    if not _installed("torch"):
        print(TORCH_MISSING, file=sys.stderr)
        return 2
    try:
        if args.worker_json or args.in_process:
            return _in_process(args, static)
        return _isolated(args, argv, static)
    except HarnessError as exc:
        return _harness_error(args, f"{PROG}: error: {exc}")
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        # A fault of the harness itself, not of the target (whose exceptions are checks).
        if os.environ.get("CUDALINT_DEBUG"):
            raise
        return _harness_error(args, f"{PROG}: internal error: {type(exc).__name__}: {exc} (set "
                                    "CUDALINT_DEBUG=1 for the traceback)")


def _init(args: argparse.Namespace) -> int:
    """`--init`, which needs no torch; without it, TARGET is required."""
    from cudalint.runtime.smoke.scaffold.init import init_target

    if not args.init:
        print(f"{PROG}: error: the following arguments are required: TARGET (or --init)",
              file=sys.stderr)
        return 2
    try:
        print(init_target(args.target, args.force))
    except HarnessError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _harness_error(args: argparse.Namespace, line: str) -> int:
    """Exit 2 with one line; a worker hands the line to its parent, which prints it."""
    if args.worker_json:
        Path(args.worker_json).write_text(json.dumps({"harness_error": line}), encoding="utf-8")
    else:
        print(line, file=sys.stderr)
    return 2


def _in_process(args: argparse.Namespace, static: StaticCheck | None) -> int:
    from cudalint.runtime.smoke.environment import TorchImportWatch

    saved_path, saved_modules = list(sys.path), set(sys.modules)
    watch = TorchImportWatch.start()
    try:
        return _run(args, watch, static)
    finally:
        watch.stop()
        sys.path[:] = saved_path
        _forget_user_modules(saved_modules)


def _isolated(args: argparse.Namespace, argv: list[str], static: StaticCheck | None) -> int:
    """Check what can be checked without the target, then run it all in a child process,
    holding SIGTERM, SIGINT and SIGHUP meanwhile (signals.py): one from outside stops the run,
    which is reported as far as it went, and smoke exits with 128 + its number."""
    from cudalint.runtime.smoke import signals

    with signals.held() as held:
        code = _run_isolated(args, argv, static, held)
    if held.stop:
        print(f"{PROG}: stopped by {held.stop_name}; the target's process group was sent it "
              "too", file=sys.stderr)
        return 128 + held.stop
    return code


def _run_isolated(args: argparse.Namespace, argv: list[str], static: StaticCheck | None,
                  held: Held) -> int:
    from cudalint.runtime.smoke.target import parse_target

    spec = parse_target(args.target)
    if spec.is_file and not Path(spec.location).is_file():
        raise HarnessError(f"no such file: {spec.location}")
    _check_reference(args, spec)
    setup = _Setup.of(args, spec)  # a bad [tool.cudalint.smoke] stops us here, before the child
    from cudalint.runtime.smoke.devices import resolve_device
    from cudalint.runtime.smoke.isolation import ChildResult, run_child

    def child() -> ChildResult:
        if held.stop:  # stopped already: the second run never starts
            return ChildResult(None, "", None, held.stop)
        return run_child(_child_argv(argv), args.timeout, held)

    device = resolve_device(args.device)
    pair = None
    ignored: tuple[str, ...] = ()
    if device.type == "mps":  # the fallback off, then on (fallback_pair)
        from cudalint.runtime.smoke.fallback_pair import pair_section, run_pair

        off, on = run_pair(child)
        pair = pair_section(off.data, on.data)
        result = on if args.allow_fallback else off
        ignored = off.ignored + on.ignored
        sys.stderr.write((on if result is off else off).output)
    else:
        result = child()
        ignored = result.ignored
    if result.output:
        sys.stderr.write(result.output)
    data = result.data or {}
    if "harness_error" in data:
        print(data["harness_error"], file=sys.stderr)
        return 2
    report = _report_from(result, args, device)
    report.warnings += list(ignored)
    if result.stopped_by is not None and result.data is not None:
        report.warnings.append(_stopped(result.stopped_by))
    if pair is not None:
        report.extra["fallback_pair"] = pair
    if not report.identity:  # the child died before writing its report
        report.identity = setup.stamp([Path(spec.location)] if spec.is_file else [])
    _add_static(report, setup.root, static, spec)
    return _finish(report, args)


def _finish(report: SmokeReport, args: argparse.Namespace) -> int:
    """Show and write the report; its exit code, with a line for each check asked for and not
    carried out."""
    from cudalint.runtime.smoke.render import render

    if args.json != "-":
        render(report)
    if args.json:
        _write(report, args.json)
    for option, why in report.unmet:
        print(f"{PROG}: error: {option} was asked for and not carried out: {why}",
              file=sys.stderr)
    return report.exit_code


def _stopped(signum: int) -> str:
    import signal

    return (f"cudalint smoke was sent {signal.Signals(signum).name} from outside and passed it on "
            "to the target's process group: the run was stopped")


def _child_argv(argv: list[str]) -> list[str]:
    """The parent's arguments, less the ones only the parent acts on."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--json", "--timeout"):
            skip = True
        elif not arg.startswith(("--json=", "--timeout=")):
            kept.append(arg)
    return kept


def _report_from(result: ChildResult, args: argparse.Namespace,
                 device: torch.device) -> SmokeReport:
    from cudalint.runtime.smoke.isolation import death
    from cudalint.runtime.smoke.report import Check, SmokeReport, Status

    if result.data is not None:
        return SmokeReport.from_dict(result.data)
    error_type, message = death(result, args.timeout)
    if result.stopped_by is not None:
        error_type, message = "Stopped", _stopped(result.stopped_by)
    report = SmokeReport(target=args.target, device=str(device), requested=requested(args),
                         environment=_parent_environment(device))
    report.checks = [Check("run", Status.FAIL, f"{error_type}: {message}")]
    report.checks += [Check(name, Status.SKIPPED, "the target did not finish")
                      for name in ("training", "compare", "determinism", "checkpoint")]
    report.error = {"phase": "run", "error_type": error_type, "message": message,
                    "location": None, "code": None, "innermost": None, "innermost_code": None,
                    "output_tail": result.tail()}
    return report


def _parent_environment(device: torch.device) -> dict[str, object]:
    """The machine, as this process sees it, for a report the child did not write: a report
    names the machine that ran it."""
    from cudalint.runtime.smoke.environment import FALLBACK_VAR, TorchImportWatch, collect

    return collect(device, TorchImportWatch(already_imported=True,
                                            at_start=os.environ.get(FALLBACK_VAR)))


def _write(report: SmokeReport, path: str) -> None:
    from cudalint.runtime.smoke.render import write_json
    from cudalint.writing import WriteError

    try:
        write_json(report, path)
    except (OSError, WriteError) as exc:
        raise HarnessError(f"cannot write {path}: {exc}") from None


def _check_reference(args: argparse.Namespace, spec: TargetSpec) -> None:
    """A saved reference is checked before the target is imported (without torch)."""
    from cudalint.runtime.smoke.reference import check_header

    if args.reference not in (None, "cpu"):
        check_header(Path(args.reference), spec.identity, spec.text)


def _forget_user_modules(before: set[str]) -> None:
    """Unload the target's modules and its siblings (`model`, `data`), so that a later run in
    the same process imports them afresh, from wherever its target lives."""
    from cudalint.runtime.smoke.crash import is_library

    for name in set(sys.modules) - before:
        filename = getattr(sys.modules[name], "__file__", None)
        if filename and not is_library(filename):
            del sys.modules[name]


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _run(args: argparse.Namespace, watch: TorchImportWatch, static: StaticCheck | None) -> int:
    from cudalint.runtime.smoke.target import TargetCrashed, load_target, parse_target

    spec = parse_target(args.target)
    _check_reference(args, spec)
    setup = _Setup.of(args, spec)
    before = set(sys.modules)
    # The target loads before the harness imports torch, so that a PYTORCH_ENABLE_MPS_FALLBACK
    # its module sets before `import torch` works as it does in the user's program. What it
    # prints goes to stderr: stdout is the report's.
    loaded: Target | Crash
    with contextlib.redirect_stdout(sys.stderr):
        try:
            loaded = load_target(spec)
        except TargetCrashed as exc:
            loaded = exc.crash
    try:
        from cudalint.runtime.smoke.pipeline import run_smoke
    except ImportError:
        raise HarnessError("torch is not installed; pip install 'cudalint[smoke]'") from None

    with contextlib.redirect_stdout(sys.stderr):
        report = run_smoke(loaded, _options(args, spec, setup.tolerance), args.target, watch)
    report.identity = setup.stamp(_used_files(spec, before))
    if args.worker_json:
        _write(report, args.worker_json)
        return report.exit_code
    _add_static(report, setup.root, static, spec)
    return _finish(report, args)


def _add_static(report: SmokeReport, root: Path, static: StaticCheck | None,
                spec: TargetSpec) -> None:
    """Join the static check's findings in the code the target can reach (in the files the run
    used) to the report's hazards; those elsewhere in those files are only counted."""
    if static is None:
        return
    from cudalint.runtime.smoke.reach import within_reach
    from cudalint.runtime.smoke.static import with_static

    named = {name: root / name for name in report.identity.get("files") or {}}
    try:
        findings = static(root, list(named.values()))
    except Exception as exc:  # the run's own report stands without the static side
        report.warnings.append(f"the static check of {len(named)} file(s) failed: "
                               f"{type(exc).__name__}: {exc}")
        return
    reached, elsewhere = within_reach(findings, named, spec)
    report.hazards = with_static(report.hazards, reached)
    if elsewhere:
        report.extra["elsewhere"] = {
            "findings": len(elsewhere),
            "detail": "cudalint check's MPS findings in code of these files that the target "
                      "cannot reach (other functions): not this run's hazards"}


class _Setup:
    """What a run is set up with before it starts: the project's root, the tolerance and where
    it came from."""

    def __init__(self, root: Path, tolerance: Tolerance, source: str) -> None:
        self.root, self.tolerance, self.source = root, tolerance, source

    @classmethod
    def of(cls, args: argparse.Namespace, spec: TargetSpec) -> _Setup:
        from cudalint.runtime.smoke.settings import project_root, resolve_tolerance

        root = project_root(spec)
        return cls(root, *resolve_tolerance(args.rtol, args.atol, root))

    def stamp(self, files: list[Path]) -> dict[str, object]:
        from cudalint.runtime.smoke.identity import stamp
        from cudalint.runtime.smoke.settings import tolerance_record

        return stamp(self.root, files, tolerance_record(self.tolerance, self.source, self.root))


def _used_files(spec: TargetSpec, before: set[str]) -> list[Path]:
    """The target's file and the file of every module first imported since `before` that is
    neither a library's nor cudalint's own (identity.file_hashes keeps those in the project)."""
    import cudalint
    from cudalint.runtime.smoke.crash import is_library

    harness = Path(cudalint.__file__).resolve().parent
    files = [Path(spec.location).resolve()] if spec.is_file else []
    for name in sorted(set(sys.modules) - before):
        filename = getattr(sys.modules.get(name), "__file__", None)
        if not isinstance(filename, str) or is_library(filename):
            continue
        path = Path(filename).resolve()
        if path != harness and harness not in path.parents and path not in files:
            files.append(path)
    return files


def _options(args: argparse.Namespace, spec: TargetSpec,
             tolerance: Tolerance) -> SmokeOptions:
    from cudalint.runtime.smoke.devices import resolve_device
    from cudalint.runtime.smoke.pipeline import SmokeOptions

    if args.save_reference is not None:
        _require_safetensors()
    return SmokeOptions(
        device=resolve_device(args.device),
        reference=None if args.reference in (None, "cpu") else _reference(Path(args.reference),
                                                                            spec),
        compare_with_cpu=args.reference == "cpu" or args.save_reference is None,
        save_reference=args.save_reference,
        tolerance=tolerance,
        repeat=args.repeat,
        allow_fallback=args.allow_fallback,
        batch_sizes=args.batch_sizes,
        interrupt=args.interrupt,
        kill_after=args.kill_after,
        requested=tuple(requested(args).items()),
    )


def requested(args: argparse.Namespace) -> dict[str, str]:
    """The checks the command line asks for, by check name, with the option as given: each
    must run, or the run exits 2."""
    asked = {
        "compare": f"--reference {args.reference}" if args.reference else "",
        "determinism": f"--repeat {args.repeat}" if args.repeat else "",
        "batch-ramp": ("--batch-sizes " + ",".join(map(str, args.batch_sizes))
                       if args.batch_sizes else ""),
        "interrupted": f"--interrupt {args.interrupt}" if args.interrupt else "",
        "killed": f"--kill-after {args.kill_after}" if args.kill_after else "",
    }
    return {name: option for name, option in asked.items() if option}


def _reference(path: Path, spec: TargetSpec) -> Reference:
    from cudalint.runtime.smoke.reference import load_reference

    _require_safetensors()
    reference = load_reference(path)
    if reference.target != spec.identity:
        raise HarnessError(f"{path} holds outputs of {reference.target_text or reference.target!r}"
                           f", not of {spec.text!r}")
    return reference


def _require_safetensors() -> None:
    if not _installed("safetensors"):
        raise HarnessError("safetensors is not installed; pip install 'cudalint[smoke]'")

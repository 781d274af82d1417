"""`cudalint smoke TARGET [...]`: exit 0 when every check passed, 1 when one failed (a crash of
the target included), 2 when the harness could not run, with a one-line message."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cudalint.runtime.smoke.errors import HarnessError

if TYPE_CHECKING:
    from cudalint.runtime.smoke.crash import Crash
    from cudalint.runtime.smoke.environment import TorchImportWatch
    from cudalint.runtime.smoke.pipeline import SmokeOptions
    from cudalint.runtime.smoke.reference import Reference
    from cudalint.runtime.smoke.target import Target, TargetSpec

PROG = "cudalint smoke"
TORCH_MISSING = f"{PROG}: error: torch is not installed; pip install 'cudalint[smoke]'"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Run a function of your project on MPS or CPU and compare it with CPU or "
                    "with outputs saved on the CUDA server.",
    )
    parser.add_argument("target", metavar="TARGET",
                        help="path/to/file.py:function or package.module:function; the "
                             "function takes a torch.device")
    parser.add_argument("--device", choices=("auto", "mps", "cpu", "cuda"), default="auto",
                        help="auto: MPS on a Mac, else CPU (CUDA only when asked for)")
    parser.add_argument("--reference", metavar="cpu|PATH",
                        help="compare with the same run on CPU (the default, unless saving a "
                             "reference) or with outputs saved by --save-reference")
    parser.add_argument("--save-reference", type=Path, metavar="PATH",
                        help="save this run's outputs, e.g. on the CUDA server")
    parser.add_argument("--rtol", type=float, help="relative tolerance (default: per dtype)")
    parser.add_argument("--atol", type=float, help="absolute tolerance (default: per dtype)")
    parser.add_argument("--repeat", type=_count, default=0, metavar="N",
                        help="run N more times with the same seed to check determinism")
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON ('-': "
                                                        "stdout instead of the table)")
    parser.add_argument("--allow-fallback", action="store_true",
                        help="on MPS, report CPU fallbacks and mixed-device ops as warnings")
    return parser


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # argparse has printed usage and the error
        return exit_.code if isinstance(exit_.code, int) else 2
    if not _installed("torch"):
        print(TORCH_MISSING, file=sys.stderr)
        return 2
    from cudalint.runtime.smoke.environment import TorchImportWatch

    saved_path, saved_modules = list(sys.path), set(sys.modules)
    watch = TorchImportWatch.start()
    try:
        return _run(args, watch)
    except HarnessError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        # A fault of the harness itself, not of the target (whose exceptions are checks).
        if os.environ.get("CUDALINT_DEBUG"):
            raise
        print(f"{PROG}: internal error: {type(exc).__name__}: {exc} (set CUDALINT_DEBUG=1 for "
              "the traceback)", file=sys.stderr)
        return 2
    finally:
        watch.stop()
        sys.path[:] = saved_path
        _forget_user_modules(saved_modules)


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


def _run(args: argparse.Namespace, watch: TorchImportWatch) -> int:
    from cudalint.runtime.smoke.target import TargetCrashed, load_target, parse_target

    spec = parse_target(args.target)
    # The target loads before the harness imports torch, so that a PYTORCH_ENABLE_MPS_FALLBACK
    # its module sets before `import torch` works as it does in the user's program.
    loaded: Target | Crash
    try:
        loaded = load_target(spec)
    except TargetCrashed as exc:
        loaded = exc.crash
    try:
        from cudalint.runtime.smoke.pipeline import run_smoke
    except ImportError:
        raise HarnessError("torch is not installed; pip install 'cudalint[smoke]'") from None
    from cudalint.runtime.smoke.render import render, write_json

    report = run_smoke(loaded, _options(args, spec), args.target, watch)
    if args.json != "-":
        render(report)
    if args.json:
        try:
            write_json(report, args.json)
        except OSError as exc:
            raise HarnessError(f"cannot write {args.json}: {exc}") from None
    return 0 if report.verdict == "pass" else 1


def _options(args: argparse.Namespace, spec: TargetSpec) -> SmokeOptions:
    from cudalint.runtime.smoke.compare import Tolerance
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
        tolerance=Tolerance(rtol=args.rtol, atol=args.atol),
        repeat=args.repeat,
        allow_fallback=args.allow_fallback,
    )


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

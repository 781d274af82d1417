"""A target's exception as the user needs to see it: the message and where in their code."""

from __future__ import annotations

import os
import sys
import sysconfig
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Crash:
    phase: str  # "import" (loading the target's module) or "run"
    error_type: str
    message: str
    location: str | None  # innermost frame in the target's own file, "train.py:42"
    code: str | None  # the source line at `location`
    innermost: str | None  # innermost frame of user code, where that is another file
    innermost_code: str | None

    def summary(self) -> str:
        lines = self.message.strip().splitlines()
        text = f"{self.error_type}: {lines[0]}" if lines else self.error_type
        where = []
        if self.location:
            where.append(f"at {self.location}" + (f": `{self.code}`" if self.code else ""))
        if self.innermost:
            where.append(f"innermost {self.innermost}"
                         + (f": `{self.innermost_code}`" if self.innermost_code else ""))
        prefix = "importing the target failed: " if self.phase == "import" else ""
        return prefix + text + (f" ({'; '.join(where)})" if where else "")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def crash_from(exc: BaseException, source: Path | None, *, phase: str) -> Crash:
    frames = traceback.extract_tb(exc.__traceback__)
    user = [frame for frame in frames if not is_library(frame.filename)]
    own = [frame for frame in user if source is not None and _same_file(frame.filename, source)]
    at = own[-1] if own else (user[-1] if user else None)
    deepest = user[-1] if user and user[-1] is not at else None
    return Crash(
        phase=phase,
        error_type=type(exc).__name__,
        message=str(exc),
        location=_where(at),
        code=_line(at),
        innermost=_where(deepest),
        innermost_code=_line(deepest),
    )


def _line(frame: traceback.FrameSummary | None) -> str | None:
    return (frame.line or None) if frame is not None else None


def _where(frame: traceback.FrameSummary | None) -> str | None:
    if frame is None:
        return None
    return f"{display_path(frame.filename)}:{frame.lineno}"


def display_path(filename: str) -> str:
    try:
        return os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename


def _same_file(filename: str, source: Path) -> bool:
    try:
        return Path(filename).resolve() == source.resolve()
    except OSError:
        return False


def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths["stdlib"], paths["purelib"], paths["platlib"], str(Path(__file__).parents[2])}
    torch = sys.modules.get("torch")
    if torch is not None and torch.__file__:
        roots.add(str(Path(torch.__file__).parent))
    return tuple(os.path.realpath(root) for root in roots)


def is_library(filename: str) -> bool:
    if filename.startswith("<"):
        return True
    real = os.path.realpath(filename)
    return any(real == root or real.startswith(root + os.sep) for root in _library_roots())

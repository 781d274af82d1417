"""What a smoke run is set up with before it starts: the project it belongs to, and the tolerance
it compares with.

The tolerance is declared once, before any run, in the project's pyproject.toml:

    [tool.cudalint.smoke]
    rtol = 1e-4
    atol = 1e-5

    [tool.cudalint.smoke.outputs.logits]   # one output (or `model`: every model[...] leaf)
    rtol = 1e-3

`--rtol`/`--atol` on the command line replace all of it for that run (a flag alone keeps the
per-dtype default for the other). The report records which of the three was used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cudalint.runtime.smoke.compare import Tolerance
from cudalint.runtime.smoke.errors import HarnessError
from cudalint.runtime.smoke.target import TargetSpec
from cudalint.runtime.smoke.tolerances import COMMAND_LINE, DEFAULT, PYPROJECT

_TABLE = "[tool.cudalint.smoke]"
_KEYS = frozenset({"rtol", "atol", "outputs"})


def project_root(spec: TargetSpec) -> Path:
    """The target's project: the nearest folder at or above the target's file (for a module
    target, the current folder, where `python -m` imports it from) that holds a pyproject.toml
    or a .git; else that folder itself."""
    from cudalint.config import find_project_root

    start = Path(spec.location).resolve().parent if spec.is_file else Path.cwd().resolve()
    return find_project_root(start) or start


def resolve_tolerance(rtol: float | None, atol: float | None,
                      root: Path) -> tuple[Tolerance, str]:
    """The tolerance to compare with and where it came from (DEFAULT, COMMAND_LINE or
    PYPROJECT). HarnessError for a [tool.cudalint.smoke] table that is not as documented."""
    if rtol is not None or atol is not None:
        return Tolerance(rtol=rtol, atol=atol), COMMAND_LINE
    table = _smoke_table(root / "pyproject.toml")
    if not table:
        return Tolerance(), DEFAULT
    where = f"{root / 'pyproject.toml'}: {_TABLE}"
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise HarnessError(f"{where}: unknown key {unknown[0]!r} (rtol, atol, outputs)")
    outputs = table.get("outputs", {})
    if not isinstance(outputs, Mapping):
        raise HarnessError(f"{where}: outputs must be a table of [tool.cudalint.smoke.outputs"
                           ".NAME] tables")
    per_output: dict[str, Tolerance] = {}
    for name, entry in outputs.items():
        place = f"{root / 'pyproject.toml'}: [tool.cudalint.smoke.outputs.{name}]"
        if not isinstance(entry, Mapping):
            raise HarnessError(f"{place} must be a table with rtol and/or atol")
        extra = sorted(set(entry) - {"rtol", "atol"})
        if extra:
            raise HarnessError(f"{place}: unknown key {extra[0]!r} (rtol, atol)")
        per_output[str(name)] = Tolerance(rtol=_number(entry, "rtol", place),
                                          atol=_number(entry, "atol", place))
    return Tolerance(rtol=_number(table, "rtol", where), atol=_number(table, "atol", where),
                     per_output=per_output), PYPROJECT


def tolerance_record(tolerance: Tolerance, source: str, root: Path) -> dict[str, Any]:
    """The report's `tolerance`: None for a value left to the per-dtype default (the numbers
    applied to each output are in `differences`, and `float32` gives a float32 output's);
    `committed` for one declared in the project: whether its pyproject.toml is in git,
    unchanged, at the run's commit (None outside git)."""
    rtol, atol = tolerance.for_dtypes("float32")
    record: dict[str, Any] = {
        "rtol": tolerance.rtol, "atol": tolerance.atol, "source": source,
        "per_output": {name: {"rtol": own.rtol, "atol": own.atol}
                       for name, own in sorted(tolerance.per_output.items())},
        "float32": {"rtol": rtol, "atol": atol}}
    if source == PYPROJECT:
        record["committed"] = committed(root / "pyproject.toml")
    return record


def committed(path: Path) -> bool | None:
    """Whether `path` is tracked by git and unchanged since the last commit; None when it is
    not in a git work tree (or git is missing)."""
    import subprocess

    def git(*args: str) -> int | None:
        try:
            return subprocess.run(["git", "-C", str(path.parent), *args], capture_output=True,
                                  timeout=10, check=False).returncode
        except (OSError, subprocess.SubprocessError):
            return None

    if git("rev-parse", "--verify", "HEAD") != 0:
        return None
    return (git("ls-files", "--error-unmatch", path.name) == 0
            and git("diff", "--quiet", "HEAD", "--", path.name) == 0)


def declared_table(root: Path) -> bool:
    """Whether the project's pyproject.toml has a [tool.cudalint.smoke] table (one that cannot
    be read counts as declared: the run reports it)."""
    try:
        return bool(_smoke_table(root / "pyproject.toml"))
    except HarnessError:
        return True


def _smoke_table(path: Path) -> Mapping[str, Any]:
    """The [tool.cudalint.smoke] table of the pyproject.toml at `path` ({} where there is none),
    read as every configuration is (cudalint.config.read_document: a regular file, within the
    size limit)."""
    from cudalint.config import ConfigError, read_document, require_no_long_number

    if not path.is_file():
        return {}
    try:
        document = read_document(path, b"cudalint")
    except ConfigError as exc:
        raise HarnessError(str(exc)) from None
    tool = document.get("tool", {})
    cudalint = tool.get("cudalint", {}) if isinstance(tool, Mapping) else {}
    table = cudalint.get("smoke", {}) if isinstance(cudalint, Mapping) else {}
    if not isinstance(table, Mapping):
        raise HarnessError(f"{path}: {_TABLE} must be a table")
    try:
        require_no_long_number(table, path)
    except ConfigError as exc:
        raise HarnessError(str(exc)) from None
    return table


def _number(table: Mapping[str, Any], key: str, where: str) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    problem = HarnessError(f"{where}: {key} must be a number from 0 up, not {value!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise problem
    try:
        number = float(value)
    except OverflowError:  # a whole number beyond any float
        raise problem from None
    if not math.isfinite(number):  # TOML's inf
        raise problem
    return number

"""`--fix` for one Python source: apply fixes pass after pass until nothing changes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.context import Settings
from cudalint.engine.fixer import apply_fixes, non_overlapping
from cudalint.engine.prefilter import Prefilter
from cudalint.engine.python import BOM, PythonResult, lint_python
from cudalint.finding import Applicability

if TYPE_CHECKING:
    from cudalint.rules.base import PythonRule

# Fixes that overlap wait for the next pass; nested `.cuda()` chains need one pass per level.
MAX_PASSES = 10


class FixError(Exception):
    """A fix produced code that does not parse: nothing is written."""


@dataclass
class FixOutcome:
    data: bytes  # the fixed source, unchanged when no fix applied
    applied: int
    result: PythonResult  # findings left after fixing


def allowed(applicability: Applicability, unsafe: bool) -> bool:
    return unsafe or applicability is Applicability.SAFE


def fix_python(
    data: bytes,
    path: Path,
    rules: Sequence[type[PythonRule]],
    settings: Settings,
    *,
    unsafe: bool = False,
    prefilter: Prefilter | None = None,
) -> FixOutcome:
    bom = BOM if data.startswith(BOM) else b""
    current, applied = data, 0
    result = lint_python(current, path, rules, settings, prefilter=prefilter)
    for _ in range(MAX_PASSES):
        chosen = non_overlapping(
            (fix, where)
            for _finding, fix, where in result.fixes
            if allowed(fix.applicability, unsafe)
        )
        if not chosen or result.module is None:
            break
        fixed = bom + apply_fixes(result.module, chosen, settings).bytes
        _check_parses(fixed, path)
        if fixed == current:
            break
        current, applied = fixed, applied + len(chosen)
        result = lint_python(current, path, rules, settings, prefilter=prefilter)
    return FixOutcome(current, applied, result)


def _check_parses(data: bytes, path: Path) -> None:
    try:
        cst.parse_module(data.removeprefix(BOM))
    except (cst.ParserSyntaxError, UnicodeDecodeError, SyntaxError) as error:
        raise FixError(f"{path}: the fixed code does not parse ({error}); file left as it was") \
            from error

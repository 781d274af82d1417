"""`--fix` for one Python source: apply fixes pass after pass until nothing changes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.fixes.fixer import apply_fixes
from cudalint.engine.fixes.imports import Needs
from cudalint.engine.lint.python import BOM, PythonResult, lint_python, one_line
from cudalint.engine.walk.context import Settings
from cudalint.finding import Applicability, Finding

if TYPE_CHECKING:
    from cudalint.engine.contract import PythonRule

# One pass applies every fix, nested ones included; a second pass only finds what the first
# pass's output still holds (a fix that makes another finding fixable). The bound only stops a
# pair of rules that would undo each other's fixes forever.
MAX_PASSES = 100


class FixError(Exception):
    """A fix produced code that does not parse: nothing is written."""


@dataclass
class FixOutcome:
    data: bytes  # the fixed source, unchanged when no fix applied
    applied: int
    result: PythonResult  # findings left after fixing
    found: list[Finding]  # findings before fixing
    needs: Needs = field(default_factory=Needs)  # imports not added (add_imports=False)


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
    add_imports: bool = True,
    remove_unused: bool = True,
    first: PythonResult | None = None,
) -> FixOutcome:
    """Apply the allowed fixes until none is left. With `add_imports=False` the imports the
    fixes need are returned in `needs` instead (a notebook imports once, for all its cells).
    `first`: the whole-file lint of `data` (`lint_python(sparse=False)`), when the caller has
    it (a check that foresees what --fix fixes: cudalint.engine.lint.foreseen)."""
    bom = BOM if data.startswith(BOM) else b""
    current, applied, needs = data, 0, Needs()
    result = first or lint_python(current, path, rules, settings, prefilter=prefilter,
                                  sparse=False)
    found = result.findings
    for _ in range(MAX_PASSES):
        chosen = [fix for _finding, fix, _where in result.fixes
                  if allowed(fix.applicability, unsafe)]
        if not chosen or result.module is None:
            break
        try:
            source = apply_fixes(result.module, chosen, settings, add_imports=add_imports,
                                 remove_unused=remove_unused)
        except ValueError as error:  # LibCST: a form feed in the indentation, and the like
            raise FixError(f"{path}: cannot apply the fixes ({one_line(error)}); file left as "
                           "it was") from error
        fixed = bom + source.bytes
        module = _parsed(fixed, path)
        if fixed == current:
            break
        current, applied, needs = fixed, applied + len(chosen), needs | source.needs
        result = lint_python(current, path, rules, settings, prefilter=prefilter,
                             sparse=False, parsed=module)
    return FixOutcome(current, applied, result, found, needs)


def _parsed(data: bytes, path: Path) -> cst.Module:
    """The fixed code as LibCST reads it (the lint of it reads no other)."""
    try:
        return cst.parse_module(data.removeprefix(BOM))
    except (cst.ParserSyntaxError, UnicodeDecodeError, SyntaxError) as error:
        raise FixError(f"{path}: the fixed code does not parse ({error}); file left as it was") \
            from error

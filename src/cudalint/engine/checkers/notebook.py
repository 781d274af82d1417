"""Jupyter notebooks: every code cell is linted (and fixed) as Python by all enabled Python
rules, and its IPython escapes are read as shell by the script rules (CUD4, CUD5).

Cells are numbered from 1 among all cells, markdown included, as ruff numbers them; rows are
relative to the cell. A cell that does not parse as Python is read again with its magics
(`%matplotlib inline`, `!nvidia-smi`, `x = !ls`, `obj?`) replaced by placeholder statements,
so rows and columns of the Python around them hold. `%%bash`-style cells are shell only;
other cell magics (`%%html`, `%%writefile`, ...) are skipped. A fixed notebook is written
back with its JSON layout: indent, key order, `source` as a list or a string, outputs, and
the trailing newline.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from functools import partial
from typing import Any

from cudalint.engine.checkers.job import FileReport, Job, finish_fix, run_file_rules
from cudalint.engine.fixes import notebook_imports
from cudalint.engine.fixes.imports import Needs
from cudalint.engine.lint.autofix import FixError, fix_python
from cudalint.engine.lint.foreseen import Simulated, everywhere, foreseen
from cudalint.engine.lint.python import BOM, error_finding, lint_python
from cudalint.engine.locate import noqa
from cudalint.engine.reading.cells import Cell, cell_text, read_cell, unmasked
from cudalint.finding import Finding
from cudalint.kinds import FileKind, SourceFile


def check_notebook(job: Job) -> FileReport:
    loaded = _load(job)
    if isinstance(loaded, Finding):
        return FileReport(job.path, [loaded])
    text, notebook = loaded
    cells: list[Any] = notebook["cells"]
    if not _is_python(notebook):
        return FileReport(job.path, [], text)
    fixing = job.options.fix or job.options.diff
    findings: list[Finding] = []
    found_before: list[Finding] = []  # with --fix: the findings before fixing
    applied = 0
    needs = Needs()
    changed: dict[int, str | list[str]] = {}  # 0-based cell index -> its new source
    for index, raw in enumerate(cells, start=1):
        if not isinstance(raw, dict) or raw.get("cell_type") != "code":
            continue
        text_of_cell = cell_text(raw)
        if text_of_cell is None:  # a fix would write the cell back without what it cannot read
            findings.append(error_finding(job.path, _MALFORMED_SOURCE).replace(cell=index))
            continue
        cell = read_cell(text_of_cell)
        shell = _shell_findings(job, cell, index)
        findings.extend(shell)
        found_before.extend(shell)
        if cell.python is None:
            continue
        if fixing:
            fixed, count, found, before, wanted = _fix_cell(job, cell)
            found_before.extend(finding.replace(cell=index) for finding in before)
            if count:
                changed[index - 1] = _as_stored(fixed, raw.get("source"))
                applied += count
                needs = needs | wanted
        else:
            result = lint_python(cell.python.encode(), job.path, job.python_rules,
                                 job.settings, prefilter=job.prefilter,
                                 want_edits=job.options.want_edits)
            found = foreseen(result.findings, result.fixes, partial(_fixed_cell, job, cell))
        findings.extend(finding.replace(cell=index) for finding in found)
    if not fixing:
        return FileReport(job.path, findings, text)
    if not changed:
        return finish_fix(job, job.data, 0, findings, found_before, check_notebook)
    new_cell = notebook_imports.add(cells, changed, needs, job.settings.helper_module)
    if new_cell is not None:
        findings = [f.replace(cell=f.cell + 1) if f.cell and f.cell > new_cell else f
                    for f in findings]
    written = None if new_cell is not None else splice_sources(text, cells, changed)
    if written is None:  # the sources could not be found in the text: write it anew
        for index, source in changed.items():
            cells[index]["source"] = source
        written = dump(notebook, text)
    bom = BOM if job.data.startswith(BOM) else b""
    return finish_fix(job, bom + written.encode(), applied, findings, found_before,
                      check_notebook)


def _load(job: Job) -> tuple[str, dict[str, Any]] | Finding:
    """The notebook's text and JSON, or the error line saying why it is not a notebook."""
    try:
        text = job.data.decode("utf-8-sig")
        notebook = json.loads(text)
    except (UnicodeDecodeError, RecursionError) as error:
        return error_finding(job.path, f"not a notebook: {error}")
    except json.JSONDecodeError as error:
        return error_finding(job.path, f"not a notebook: invalid JSON: {error.msg}",
                             error.lineno, error.colno)
    except ValueError:  # an integer of more digits than int() converts (CPython's guard)
        return error_finding(job.path, "skipped: the notebook holds a number of more than "
                                       f"{_digit_limit()} digits, which Python does not read")
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        return error_finding(job.path, "not a notebook: no `cells` list (only nbformat 4 is "
                                       "read)")
    return text, notebook


def _digit_limit() -> int:
    return sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300


def _is_python(notebook: dict[str, Any]) -> bool:
    metadata = notebook.get("metadata")
    if not isinstance(metadata, dict):
        return True
    language = _field(metadata, "kernelspec", "language") or _field(
        metadata, "language_info", "name") or "python"
    return str(language).lower().startswith("python")


def _field(metadata: dict[str, Any], table: str, key: str) -> object:
    value = metadata.get(table)
    return value.get(key) if isinstance(value, dict) else None


_MALFORMED_SOURCE = "cell `source` is not text nor a list of strings; cell not checked"


def _as_stored(text: str, original: object) -> str | list[str]:
    """The cell text in the notebook's own form: a list of lines or one string."""
    return text.splitlines(keepends=True) if isinstance(original, list) else text


def _shell_findings(job: Job, cell: Cell, index: int) -> list[Finding]:
    rules = [rule for rule in job.file_rules if FileKind.SHELL in rule.file_kinds]
    if not rules or not cell.shell.strip():
        return []
    source = SourceFile(job.path, FileKind.SHELL, cell.shell.encode(), cell.shell)
    found = noqa.unsuppressed(run_file_rules(rules, source), cell.text.split("\n"))
    return [finding.replace(cell=index) for finding in found]


def _fix_cell(job: Job, cell: Cell) -> tuple[str, int, list[Finding], list[Finding], Needs]:
    """The fixed cell text, the fixes applied, the findings left and those before fixing, and
    the imports the fixes need: the notebook imports them once
    (cudalint.engine.fixes.notebook_imports). Imports are not removed: a name one cell no longer
    uses may be used by another."""
    assert cell.python is not None
    try:
        outcome = fix_python(cell.python.encode(), job.path, job.python_rules, job.settings,
                             unsafe=job.options.unsafe_fixes, prefilter=job.prefilter,
                             add_imports=False, remove_unused=False)
    except FixError as error:
        errors = [error_finding(job.path, str(error))]
        return cell.text, 0, errors, errors, Needs()
    fixed = unmasked(outcome.data.decode(), cell.originals)
    if fixed is None:  # a fix moved a placeholder: leave the cell as it was
        result = lint_python(cell.python.encode(), job.path, job.python_rules, job.settings,
                             prefilter=job.prefilter)
        return cell.text, 0, result.findings, result.findings, Needs()
    return fixed, outcome.applied, outcome.result.findings, outcome.found, outcome.needs


def _fixed_cell(job: Job, cell: Cell, unsafe: bool, _near: Sequence[Finding]) -> Simulated:
    """The cell's findings before and after --fix fixes it in memory (what a check foresees);
    the whole cell is read."""
    fixing = job.replace(options=job.options.replace(fix=True, unsafe_fixes=unsafe))
    _, _, after, before, _ = _fix_cell(fixing, cell)
    return before, after, everywhere


# -- writing ----------------------------------------------------------------------------------
_SOURCE_KEY = re.compile(r'"source"\s*:\s*')


def splice_sources(text: str, cells: list[Any], changed: dict[int, str | list[str]],
                   ) -> str | None:
    """The notebook text with only the changed cells' `source` values rewritten, each in the
    layout of the value it replaces; every other byte stays. None when a cell's `source`
    cannot be found in the text."""
    decoder = json.JSONDecoder()
    ascii_only = _escapes_non_ascii(text)
    pieces: list[str] = []
    cursor = search = 0
    for index, cell in enumerate(cells):
        if index > max(changed):
            break
        while True:
            key = _SOURCE_KEY.search(text, search)
            if key is None:
                return None
            try:
                value, end = decoder.raw_decode(text, key.end())
            except ValueError:
                search = key.end()
                continue
            search = end
            if isinstance(cell, dict) and value == cell.get("source"):
                break
        if index in changed:
            old = text[key.end() : end]
            pieces += [text[cursor : key.end()], _formatted(changed[index], old, ascii_only)]
            cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _formatted(value: str | list[str], old: str, ascii_only: bool) -> str:
    """`value` as JSON laid out like `old`: a list one element per line when `old` was."""
    newline = "\r\n" if "\r\n" in old else "\n"
    element = re.match(r"\[\s*?\r?\n([ \t]*)\S", old)
    if isinstance(value, str) or element is None or not value:
        separators = (", ", ": ") if ", " in old or "," not in old else (",", ":")
        return json.dumps(value, ensure_ascii=ascii_only, separators=separators)
    closing = re.search(r"\n([ \t]*)\]$", old)
    lines = [element.group(1) + json.dumps(line, ensure_ascii=ascii_only) for line in value]
    return "[" + newline + ("," + newline).join(lines) + newline + \
        (closing.group(1) if closing else "") + "]"


def _escapes_non_ascii(text: str) -> bool:
    return "\\u" in text and all(ord(c) < 128 for c in text)


def dump(notebook: Any, original: str) -> str:
    """The notebook as JSON in the layout of `original`: its indent, separators, escaping
    of non-ASCII text, line endings and trailing newline; keys stay in their order."""
    indent_match = re.match(r"\{\r?\n([ \t]+)\"", original)
    indent: str | int | None = None
    if indent_match is not None:
        whitespace = indent_match.group(1)
        indent = len(whitespace) if set(whitespace) == {" "} else whitespace
    compact = indent is None and not re.match(r"\{\s*\"[^\"]*\"\s*:\s", original)
    # one line: json's own `, ` between items (an indented layout ends its lines after `,`)
    separators = (",", ":") if compact else (", " if indent is None else ",", ": ")
    text = json.dumps(notebook, indent=indent, separators=separators,
                      ensure_ascii=_escapes_non_ascii(original))
    if "\r\n" in original:
        text = text.replace("\n", "\r\n")
    if original.endswith("\n"):
        text += "\r\n" if original.endswith("\r\n") else "\n"
    return text


"""A fixed notebook imports what its fixes need once: in the first code cell that imports
(after its imports) when no earlier cell needs the names, else in a new first code cell. Never
in a cell that starts with a cell magic (`%%timeit`), which must stay the cell's first line.
The inline helper (a notebook's, engine.project.helper_place) goes before the first cell's
code that needs it, so that it is defined whatever else fails (an import of that cell): at
the top of that cell, after its leading magics, or, where the cell imports (the imports
would follow code: E402) or starts with a cell magic, in a new cell just before it."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import libcst as cst

from cudalint.engine.first_pass.sparse import text_lines
from cudalint.engine.fixes import imports
from cudalint.engine.fixes.imports import Layout, Needs
from cudalint.engine.reading import depth
from cudalint.engine.reading.cells import read_cell, unmasked
from cudalint.engine.settings import INLINE_MODULE
from cudalint.runtime.helper import inline_block


def add(cells: list[Any], changed: dict[int, str | list[str]], needs: Needs,
        helper_module: str) -> int | None:
    """Import `needs` once. Either one entry of `changed` (0-based cell index -> source) gets
    the imports, and None is returned; or `changed` is applied to `cells`, emptied, a new
    code cell is inserted before the first code cell, and its 1-based number is returned."""
    code_cells = [(i, c) for i, c in enumerate(cells)  # a cell not read is not rewritten
                  if isinstance(c, dict) and c.get("cell_type") == "code"
                  and _readable(c.get("source", ""))]
    sources = {i: _text(changed.get(i, c.get("source", ""))) for i, c in code_cells}
    wanted = _missing(sources.values(), needs, helper_module)
    if not wanted:
        return None
    first_use = min(changed)
    if helper_module == INLINE_MODULE and wanted.helpers:
        cell = read_cell(sources[first_use]) if first_use in sources else None
        if cell is None or cell.python is None or sources[first_use].startswith("%%") \
                or _imports(cell.python):
            # A cell magic stays its cell's first line; above a cell's imports the helper
            # would make them E402: a cell of its own just before.
            return _insert_cell(cells, changed, first_use, wanted, helper_module)
        _set(cells, changed, first_use, _inline_on_top(sources[first_use], wanted.helpers))
        wanted = Needs(modules=wanted.modules)
        if not wanted:
            return None
        sources[first_use] = _text(changed[first_use])
    for index, _cell in code_cells:
        if index > first_use:  # the import would run after a cell that needs it
            break
        cell = read_cell(sources[index])
        if cell.python is None or sources[index].startswith("%%"):
            continue
        fixed = _with_imports(cell.python, cell.originals, wanted, helper_module)
        if fixed is not None:
            _set(cells, changed, index, fixed)
            return None
    first = code_cells[0][0] if code_cells else 0
    return _insert_cell(cells, changed, first, wanted, helper_module)


def _set(cells: list[Any], changed: dict[int, str | list[str]], index: int, text: str) -> None:
    original = cells[index].get("source")
    changed[index] = text.splitlines(keepends=True) if isinstance(original, list) else text


# The lines a cell's helper goes after: line magics and shell escapes (`%pip install ...`,
# `!nvidia-smi`), comments and blank lines.
_LEADING = re.compile(r"[ \t]*(?:[%!#].*)?\n?")


def _inline_on_top(source: str, helpers: frozenset[str]) -> str:
    """The cell with the inline helper on top, after its leading magics and before its
    imports: defined even where an import of the cell fails (the repository's package not
    installed), for this cell and the next ones."""
    lines = text_lines(source)  # as Python counts lines (a form feed in a comment ends none)
    skip = 0
    while skip < len(lines) and _LEADING.fullmatch(lines[skip].rstrip("\r\n") + "\n") \
            and not lines[skip].rstrip().endswith("\\"):
        skip += 1
    while skip and not lines[skip - 1].strip():  # the block's own blank line follows them
        skip -= 1
    text = inline_block(sorted(helpers), (), "\n")
    if any(line.strip() for line in lines[skip:]):
        text += "\n"
    if skip and not lines[skip - 1].endswith(("\n", "\r")):
        text = "\n" + text
    return imports.apply(source, [imports.LineEdit(skip, skip, text)])


def _imports(python: str) -> bool:
    """Whether the cell imports at its top level (or cannot be read: as if it did)."""
    module = _parse(python)
    return module is None or bool(imports.imported_names(module)) or any(
        isinstance(statement, cst.Try) for statement in module.body)


def _readable(source: object) -> bool:
    return isinstance(source, str) or (
        isinstance(source, list) and all(isinstance(part, str) for part in source))


def _text(source: object) -> str:
    if isinstance(source, list):
        return "".join(part for part in source if isinstance(part, str))
    return source if isinstance(source, str) else ""


def _parse(text: str) -> cst.Module | None:
    try:
        return depth.parse_module(text)
    except (cst.ParserSyntaxError, SyntaxError, ValueError, RecursionError):
        return None


def _missing(sources: Any, needs: Needs, helper_module: str) -> Needs:
    """What no cell imports yet."""
    for text in sources:
        python = read_cell(text).python
        module = _parse(python) if python is not None else None
        if module is not None:
            needs = imports.missing(module, needs, helper_module)
    return needs


def _with_imports(python: str, originals: dict[int, str], needs: Needs,
                  helper_module: str) -> str | None:
    """The cell with the imports after its own, or None when it imports nothing."""
    module = _parse(python)
    if module is None or not imports.imported_names(module):
        return None
    edits = imports.add_edits(Layout(module), needs, helper_module)
    return unmasked(imports.apply(module.code, edits), originals)


def _cell_id(text: str, cells: list[Any]) -> str:
    """An id for the new cell made from what it holds and the ids beside it, never a random
    one: fixing a notebook alone and in its tree writes the same bytes (scripts/parity.py)."""
    taken = {cell.get("id") for cell in cells if isinstance(cell, dict)}
    seed = text + "".join(sorted(str(name) for name in taken))
    for attempt in range(len(taken) + 1):
        candidate = hashlib.sha256(f"{attempt}:{seed}".encode()).hexdigest()[:8]
        if candidate not in taken:
            return candidate
    raise AssertionError("unreachable: more candidates than ids taken")


def _insert_cell(cells: list[Any], changed: dict[int, str | list[str]], first: int,
                 needs: Needs, helper_module: str) -> int:
    """A new code cell with the imports, before the cell `first`."""
    for index, source in changed.items():
        cells[index]["source"] = source
    changed.clear()
    module = cst.parse_module("")
    text = imports.apply("", imports.add_edits(Layout(module), needs, helper_module))
    template = cells[first] if first < len(cells) else {}
    cell: dict[str, Any] = {"cell_type": "code", "execution_count": None, "metadata": {},
                            "outputs": [], "source": text.rstrip("\n").splitlines(keepends=True)}
    if isinstance(template, dict) and "id" in template:
        cell = {"id": _cell_id(text, cells), **cell}
    if isinstance(template, dict) and isinstance(template.get("source"), str):
        cell["source"] = text.rstrip("\n")
    cells.insert(first, cell)
    return first + 1

"""The last check of a fixed file before it is written, of what the fixer must never do: a
fixed module that CPython does not compile (an import put above `from __future__`), or that
reads a helper name it binds nowhere though the file as read did (an import put inside a
comment); in a notebook, a cell the fix changed that does not compile, or a helper name that
no cell binds."""

from __future__ import annotations

import ast
import json
import warnings
from pathlib import Path

from cudalint.engine.reading.cells import cell_text, read_cell
from cudalint.kinds import FileKind
from cudalint.runtime.helper import known_helpers


def unsound(kind: FileKind, fixed: bytes, original: bytes, path: Path) -> str | None:
    """Why the fixed file must not be written, if it must not (a Python file or a notebook)."""
    if kind is FileKind.PYTHON:
        return _unsound_module(fixed, original, path)
    if kind is FileKind.NOTEBOOK:
        return _unsound_notebook(fixed, original)
    return None


def _unsound_module(fixed: bytes, original: bytes, path: Path) -> str | None:
    error = _compile_error(fixed, str(path))
    # (a `break` outside a loop: `ast` reads it, the compiler refuses it: the file's own)
    if error is not None and _compile_error(original, str(path)) is None:
        return f"the fixed file would not compile: {_why(error)}; a bug in cudalint"
    unbound = _unbound_helpers(_trees([fixed]))
    if unbound:
        unbound -= _unbound_helpers(_trees([original]))
    if unbound:
        return f"the fixed file would not bind {', '.join(sorted(unbound))}, which it uses; " \
            "a bug in cudalint"
    return None


def _unsound_notebook(fixed: bytes, original: bytes) -> str | None:
    """A cell the fix changed compiles (as IPython runs it: top-level `await` allowed, magics
    masked) unless the notebook as read had as many cells that do not, and a helper name some
    cell reads is bound in some cell (the cells share one namespace), as it was as read."""
    after, before = _python_cells(fixed), _python_cells(original)
    if after is None or before is None:
        return None
    kept = set(before)
    broken = [(number, error) for number, python in enumerate(after, start=1)
              if python not in kept and (error := _cell_error(python)) is not None]
    if broken and len(broken) > sum(_cell_error(python) is not None
                                    for python in before if python not in after):
        number, error = broken[0]
        return f"the fixed cell {number} would not compile: {_why(error)}; a bug in cudalint"
    unbound = _unbound_helpers(_trees(after))
    if unbound:
        unbound -= _unbound_helpers(_trees(before))
    if unbound:
        return f"the fixed notebook would not bind {', '.join(sorted(unbound))}, which its " \
            "cells use; a bug in cudalint"
    return None


def _cell_error(python: str) -> SyntaxError | ValueError | None:
    return _compile_error(python, "cell", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def _python_cells(data: bytes) -> list[str] | None:
    """The Python view of each code cell (None: not a notebook's JSON)."""
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return None
    found = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            text = cell_text(cell)
            python = None if text is None else read_cell(text).python
            if python is not None:
                found.append(python)
    return found


def _compile_error(source: bytes | str, name: str,
                   flags: int = 0) -> SyntaxError | ValueError | None:
    """Why CPython does not compile `source`, if it does not."""
    with warnings.catch_warnings():  # `"\d"`: the file's own, reported by no one here
        warnings.simplefilter("ignore")
        try:
            compile(source, name, "exec", flags=flags, dont_inherit=True)
        except (SyntaxError, ValueError) as error:
            return error
    return None


def _why(error: SyntaxError | ValueError) -> str:
    if not isinstance(error, SyntaxError):
        return str(error)
    return error.msg + (f" (line {error.lineno})" if error.lineno else "")


def _trees(sources: list[bytes] | list[str]) -> list[ast.Module]:
    """The sources that `ast` reads (a file's own syntax error is not the fix's)."""
    trees = []
    for source in sources:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                trees.append(ast.parse(source))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
    return trees


def _unbound_helpers(trees: list[ast.Module]) -> set[str]:
    """The device helper's names (cudalint.runtime.helper) the modules read and bind nowhere."""
    helpers = known_helpers()
    read: set[str] = set()
    bound: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                bound.update((alias.asname or alias.name).partition(".")[0]
                             for alias in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
    return (read & helpers) - bound

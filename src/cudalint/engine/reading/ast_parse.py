"""CPython's `ast` parse of a source, as every stage reads it: quietly."""

from __future__ import annotations

import ast
import warnings


def parse_quietly(source: bytes | str, filename: str = "<unknown>") -> ast.Module:
    r"""`ast.parse` without CPython's SyntaxWarnings (`"\d"` and the like: the rules' business,
    never a line on the user's stderr)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source, filename=filename)

"""The help formatter of every subcommand's argparse parser."""

from __future__ import annotations

import argparse
import os
import sys


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a default where there is one to show (not for switches or unset options)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        # argparse makes a formatter for every add_argument; given no width, it imports
        # shutil (and with it bz2, lzma, zlib) to ask for the terminal's, on every run
        super().__init__(prog, indent_increment, max_help_position,
                         terminal_columns() - 2 if width is None else width)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False, [], argparse.SUPPRESS):
            return action.help
        return super()._get_help_string(action)


def terminal_columns() -> int:
    """The terminal's width as shutil.get_terminal_size() reads it: $COLUMNS, else the
    terminal of standard output, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80

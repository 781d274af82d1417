"""`cudalint init-helper PATH`: write a standalone copy of the device helper into a project.

Point `[tool.cudalint] helper` at its module so fixes import from it, not from cudalint.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from cudalint.commands.help import HelpFormatter
from cudalint.config import find_project_root


def parser(parser_class: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = parser_class(prog="cudalint init-helper",
                          description="Write a standalone copy of the device helper.",
                          formatter_class=HelpFormatter)
    parser.add_argument("path", type=Path, help="where to write the helper, e.g. src/pkg/device.py")
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")
    return parser


def run(args: argparse.Namespace) -> int:
    from cudalint.runtime.helper import HelperExistsError, write_helper
    from cudalint.writing import WriteError

    try:
        write_helper(args.path, force=args.force)
    except HelperExistsError as error:
        print(f"cudalint: error: {error}", file=sys.stderr)
        return 2
    except WriteError as error:
        print(f"cudalint: error: {args.path}: {error}", file=sys.stderr)
        return 2
    module = module_name(args.path)
    print(f"Wrote {args.path}. Add to pyproject.toml:\n\n[tool.cudalint]\nhelper = \"{module}\"")
    return 0


def module_name(path: Path) -> str:
    """The module `path` is imported as: relative to the project root (the nearest
    pyproject.toml or git root), without a `src/` layout's folder."""
    full = Path(os.path.abspath(path))
    root = find_project_root(_existing(full.parent)) or Path.cwd()
    try:
        parts = list(full.relative_to(root).with_suffix("").parts)
    except ValueError:
        parts = list(path.with_suffix("").parts)
    if len(parts) > 1 and parts[0] == "src":
        parts = parts[1:]
    return ".".join(p for p in parts if p not in (".", "", os.sep))


def _existing(folder: Path) -> Path:
    """The nearest existing folder at or above `folder` (the helper's may not exist yet)."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder

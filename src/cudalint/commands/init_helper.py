"""`cudalint init-helper PATH`: write a standalone copy of the device helper into a project.

Point `[tool.cudalint] helper` at its module so fixes import from it, not from cudalint.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="cudalint init-helper", exit_on_error=False)
    parser.add_argument("path", type=Path, help="where to write the helper, e.g. src/pkg/device.py")
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")
    try:
        args = parser.parse_args(list(argv))
    except argparse.ArgumentError as error:
        print(f"cudalint: error: {error}", file=sys.stderr)
        return 2
    from cudalint.runtime.helper import HelperExistsError, write_helper

    try:
        write_helper(args.path, force=args.force)
    except (HelperExistsError, OSError) as error:
        print(f"cudalint: error: {error}", file=sys.stderr)
        return 2
    module = _module_name(args.path)
    print(f"Wrote {args.path}. Add to pyproject.toml:\n\n[tool.cudalint]\nhelper = \"{module}\"")
    return 0


def _module_name(path: Path) -> str:
    parts = list(path.with_suffix("").parts)
    if parts and parts[0] == "src":
        parts = parts[1:]
    return ".".join(p for p in parts if p not in (".", ""))

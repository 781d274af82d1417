"""The argparse parser of the subcommands that parse with argparse (report, smoke,
lsp): a usage error is one line and exits 2. Below every other module, so that
the smoke harness and the language server can use it."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from typing import NoReturn

USAGE_ERROR = 2


class OneLineParser(argparse.ArgumentParser):
    """A parser whose usage errors are one line, `PROG: error: MESSAGE`, and exit 2, as every
    cudalint command's (argparse's own prints the usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")

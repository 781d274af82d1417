from __future__ import annotations

import os
import sys

# `python -m cudalint` puts the current folder first on sys.path: a project's own
# `tomllib.py` or `libcst/` would stand in for the modules cudalint imports. Drop it, as
# `python -P` does (cudalint's own modules are found through the package, not sys.path).
if sys.path and sys.path[0] in ("", os.getcwd()) and not sys.flags.safe_path:
    del sys.path[0]

from cudalint.cli import main  # (after the path is safe)

raise SystemExit(main())

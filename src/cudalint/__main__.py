from __future__ import annotations

from cudalint.cli import main

raise SystemExit(main())

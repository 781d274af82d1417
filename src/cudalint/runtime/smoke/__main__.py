from __future__ import annotations

from cudalint.runtime.smoke.command import main

raise SystemExit(main())

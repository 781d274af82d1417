"""A bounded, derandomized fuzz run in CI; scripts/fuzz.py runs the long one."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from tests.engine.fuzzing import check_properties, programs


@settings(max_examples=20, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs())
def test_generated_programs_keep_the_engine_properties(source):
    with tempfile.TemporaryDirectory() as folder:
        check_properties(Path(folder), source)

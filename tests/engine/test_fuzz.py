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


@settings(max_examples=10, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs(aliased_methods=True))
def test_generated_programs_with_aliased_imports_used_in_methods(source):
    """Each program ends with a class whose methods name only an import's aliases
    (tests.engine.fuzzing.ALIASED_METHODS): the first pass must read them."""
    with tempfile.TemporaryDirectory() as folder:
        check_properties(Path(folder), source)

"""The engine sits below the rules: importing any engine module loads no rule module."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import cudalint.engine

_PROBE = """
import importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print("\\n".join(sorted(m for m in sys.modules if m.startswith("cudalint.rules"))))
"""


def _engine_modules() -> list[str]:
    found = pkgutil.walk_packages(cudalint.engine.__path__, "cudalint.engine.")
    return [info.name for info in found]


def _loaded_rule_modules(modules: list[str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *modules], capture_output=True,
                          text=True, check=True)
    return done.stdout.split()


def test_every_engine_module_is_listed() -> None:
    assert {"cudalint.engine.running.runner", "cudalint.engine.lint.python",
            "cudalint.engine.checkers.notebook"} <= set(_engine_modules())


def test_the_engine_imports_no_rule_module() -> None:
    assert _loaded_rule_modules(_engine_modules()) == []


def test_the_probe_sees_a_rule_import() -> None:
    # the probe itself must be able to fail
    rule = "cudalint.rules.cud1_device.cuda_method"
    assert rule in _loaded_rule_modules([rule])

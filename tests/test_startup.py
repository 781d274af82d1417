"""What a run imports (a structural check, not a timing): start-up is most of a small run's
cost, and a run whose files all come from the cache needs neither LibCST nor the rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cudalint

_SRC = str(Path(cudalint.__file__).resolve().parents[1])
# Runs `cudalint ARGS` with stdout piped, then prints the modules it imported as JSON on stderr.
_PROBE = ("import json, sys\nfrom cudalint.cli import main\nstatus = main(sys.argv[1:])\n"
          "sys.stderr.write(json.dumps(sorted(sys.modules)))\n")
_SMALL = ("import torch\n\nmodel = torch.nn.Linear(4, 2).cuda()\n"
          "x = torch.zeros(3, device='cuda:0')\n")
# (packaging.version is light, and read when a rule picks the MPS table for the target torch.)
_NEVER_WHEN_PIPED = ("rich", "yaml", "elftools", "libcst.matchers", "packaging.requirements",
                     "packaging.markers", "cudalint.rules.cud4_pins.conda", "pathspec",
                     "shutil")
# (tomllib: the project has no pyproject.toml, and a replayed run reads no data table)
_NEVER_WHEN_CACHED = ("libcst", "cudalint.engine.contract", "cudalint.rules.cud1_device",
                      "cudalint.engine.lint.python", "concurrent.futures.process",
                      "multiprocessing",
                      "rich", "packaging", "pathspec", "cudalint.engine.running.pool",
                      "cudalint.engine.first_pass.prefilter", "cudalint.runtime.helper", "shutil",
                      "tomllib", "hashlib", "typing", "dataclasses", "inspect", "argparse",
                      "importlib")


def _imported(folder: Path, *args: str) -> tuple[str, set[str]]:
    cache = folder.parent / f"{folder.name}-cache"  # outside the tree checked
    env = {**os.environ, "PYTHONPATH": _SRC, "CUDALINT_CACHE_DIR": str(cache)}
    env.pop("FORCE_COLOR", None)
    done = subprocess.run([sys.executable, "-c", _PROBE, "check", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    return done.stdout, set(json.loads(done.stderr.splitlines()[-1]))


def _packages(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(f"{n}.") for n in names))


@pytest.mark.parametrize("output_format", ["full", "concise", "json"])
def test_a_small_file_piped_imports_nothing_heavy(tmp_path, output_format):
    (tmp_path / "small.py").write_text(_SMALL)
    out, modules = _imported(tmp_path, "--no-cache", "--output-format", output_format,
                             "small.py")
    assert "CUD102" in out  # it was checked, with LibCST
    assert "libcst" in modules
    assert _packages(modules, _NEVER_WHEN_PIPED) == []


def test_a_python_file_imports_no_parser_and_no_rule_module_of_other_kinds(tmp_path):
    """The parsers of scripts, requirements, TOML or YAML files, and the rule modules that
    read only such files, stay unimported while only Python files are checked (a module that
    also holds a PythonRule is imported; it loads a parser once it meets what needs one)."""
    from cudalint.rules import index

    python_modules = {e["module"] for e in index.entries() if "python" in e["kinds"]}
    others = tuple({e["module"] for e in index.entries()} - python_modules)
    assert "cudalint.rules.cud6_mps.float64" in python_modules
    (tmp_path / "small.py").write_text(_SMALL)
    (tmp_path / "train.py").write_text("import os\n\nimport torch\n\n"
                                       "x = torch.ones(2, dtype=torch.float64)\n"
                                       "print(os.getcwd(), x.device)\n")
    out, modules = _imported(tmp_path, "--no-cache", "--output-format", "concise", ".")
    assert "CUD102" in out
    assert others and _packages(modules, others) == []
    assert _packages(modules, ("cudalint.formats", "cudalint.engine.checkers.notebook",
                               "packaging")) == []
    # a small run imports the rules its files name the terms of: train.py names float64
    assert "cudalint.rules.cud6_mps.float64" in modules
    assert "cudalint.rules.cud7_distributed.nccl" not in modules


def test_a_run_replayed_from_the_cache_imports_no_rule_and_no_libcst(tmp_path):
    (tmp_path / ".git").mkdir()  # the project's root, and its .gitignore of globs
    (tmp_path / ".gitignore").write_text("*.py[cod]\n.venv/\n/build/\ndocs/_build/\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "generated.py").write_text(_SMALL)
    (tmp_path / "small.py").write_text(_SMALL)
    (tmp_path / "clean.py").write_text("import os\n\nprint(os.getcwd())\n")
    (tmp_path / "requirements.txt").write_text("numpy==1.26.4\nrich>=13  # for the logs\n")
    first, modules = _imported(tmp_path, "--output-format", "concise", ".")
    assert "libcst" in modules
    second, modules = _imported(tmp_path, "--output-format", "concise", ".")
    assert second == first
    assert "CUD102" in second and "generated.py" not in second
    assert _packages(modules, _NEVER_WHEN_CACHED) == []


def test_plain_name_excludes_match_as_pathspec_does():
    """Excludes that are all plain names are matched without importing pathspec, with the
    answers pathspec's gitignore rules give: any component, at any depth, files and folders
    (`covers`), or the last component only (`matches`, what a walk asks of an entry)."""
    import itertools

    from cudalint.config import DEFAULT_EXCLUDE
    from cudalint.engine.running.discovery import _Names, _PathspecPatterns, _spec

    lines = [*DEFAULT_EXCLUDE, "build.log", "my-dir", "# a comment", ""]
    names, reference = _spec(lines), _PathspecPatterns(lines)
    assert isinstance(names, _Names)
    parts = ["src", "venv", ".venv", "dist", "x.py", "build.log", "dist2", "adist", "my-dir",
             "site-packages", "__pycache__", ".git"]
    for depth in (1, 2, 3):
        for combo in itertools.product(parts, repeat=depth):
            for path in ("/".join(combo), "/".join(combo) + "/", "/work/" + "/".join(combo)):
                assert names.covers(path) == reference.covers(path), path
                assert names.matches(path) == reference.matches(path), path
    assert not isinstance(_spec(["*.pyc", "dist"]), _Names)  # a glob: pathspec decides
    assert not isinstance(_spec(["build/"]), _Names)  # folders only
    assert not isinstance(_spec(["!keep"]), _Names)

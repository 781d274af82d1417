"""`cudalint smoke --init [FILE] [--force]`: write FILE (default smoke_target.py; a folder gets
one inside it) from a reading of its project (the nearest folder at or above it with a
pyproject.toml or a .git). Needs no torch: it only reads. Exit 0 written; 2 not written (the
file exists and --force is not given, no model class found, the file cannot be written), with
one line."""

from __future__ import annotations

import os
from pathlib import Path

from cudalint.runtime.smoke.errors import HarnessError

DEFAULT_NAME = "smoke_target.py"
INIT_TARGET = f"{DEFAULT_NAME}:train_step"  # what to run after --init


def init_target(location: str | None, force: bool) -> str:
    """Write the target; the line to print. HarnessError (exit 2) when it was not written."""
    from cudalint.config import find_project_root
    from cudalint.runtime.smoke.scaffold.facts import read_project
    from cudalint.runtime.smoke.scaffold.values import main_model
    from cudalint.runtime.smoke.scaffold.writer import write_target
    from cudalint.writing import WriteError, write_file

    target = Path(location or DEFAULT_NAME)
    if target.is_dir() and not target.is_symlink():
        target = target / DEFAULT_NAME
    if target.suffix != ".py":
        raise HarnessError(f"{target}: the target to write must be a .py file")
    if target.is_symlink():  # a cloned repository may hold one, dangling or not
        raise HarnessError(f"{target}: not written: a symbolic link is at its name (name the "
                           "file it points to)")
    if os.path.lexists(target) and not force:
        raise HarnessError(f"{target} exists; pass --force to overwrite it")
    if not target.parent.is_dir():
        raise HarnessError(f"no such folder: {target.parent}")
    # Its own folder, not where a link at its name points (a cloned repository may hold one).
    written_at = Path(os.path.abspath(target))
    folder = written_at.parent.resolve()
    root = find_project_root(folder) or folder
    facts = read_project(root, skip=folder / written_at.name)
    model = main_model(facts)
    if model is None:
        raise HarnessError(f"no nn.Module subclass found under {root}: write the target by "
                           "hand (docs/smoke.md, 'The target')")
    written = write_target(facts, model, target)
    try:
        write_file(target, written.text.encode("utf-8"), overwrite=force)
    except WriteError as error:
        raise HarnessError(f"{target}: {error}") from None
    edit = f", {written.to_edit} with nothing to go on" if written.to_edit else ""
    wrote = (f"wrote {target} from {', '.join(written.found)}: {written.guesses} guess(es) "
             f"marked '# GUESS: confirm'{edit}; check them, then run "
             f"`cudalint smoke {target}:train_step`")
    return wrote + _tolerance_proposal(root)


# What --init proposes to declare where the project declares no tolerance yet.
TOLERANCE_PROPOSAL = """
[tool.cudalint.smoke]
rtol = 1e-4   # float32's defaults are rtol 1.3e-06, atol 1e-05: another device sums in
atol = 1e-5   # another order; choose what your study accepts, before you see a result"""


def _tolerance_proposal(root: Path) -> str:
    """The table to commit, when pyproject.toml has no [tool.cudalint.smoke] (a table that is
    there but wrong is the run's error to report)."""
    from cudalint.runtime.smoke.settings import declared_table

    if declared_table(root):
        return ""
    return ("\nno tolerance is declared: decide it before the first run, add it to "
            f"{root / 'pyproject.toml'} and commit it:{TOLERANCE_PROPOSAL}")

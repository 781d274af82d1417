"""`check --show-files` and `check --show-settings`: what a run would read, and with what."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from cudalint import rules as registry
from cudalint.config import Config
from cudalint.engine.project import facts as project
from cudalint.engine.running.discovery import discover
from cudalint.engine.running.runner import RunOptions, rules_for, selected_rules
from cudalint.kinds import classify
from cudalint.output.paths import display_path


def files(paths: Sequence[Path], config: Config, options: RunOptions) -> int:
    """Each file a run would check, with its kind, one a line."""
    for path, kind in discover(paths, config, force_exclude=options.force_exclude):
        print(f"{display_path(path)}\t{kind.value}")
    return 0


def settings(path: Path, config: Config, options: RunOptions,
             paths: Sequence[Path] = ()) -> int:
    """The settings a check of `path` (among `paths`, the run's) uses: the configuration's
    (`target-torch` resolved, with where it comes from), the command line's selection, and
    the rules that run on it."""
    kind = classify(path)
    enabled = rules_for(path, selected_rules(registry, config, options), config)
    lines = [
        f"Resolved settings for: {display_path(path)}",
        f"Settings path: {config.source or 'none (defaults)'}",
        f"Project root: {config.root}",
        f"kind = {json.dumps(kind.value if kind else None)}",
    ]
    for name in config.FIELDS:
        if name == "target_torch":
            lines.append(_target_torch(config, options, paths or [path]))
        elif name not in ("root", "source"):
            lines.append(f"{name.replace('_', '-')} = {json.dumps(getattr(config, name))}")
    for name in ("select", "ignore", "extend_select"):
        value = getattr(options, name)
        if value:
            lines.append(f"command-line {name.replace('_', '-')} = {json.dumps(value)}")
    codes = sorted({rule.code for rule in enabled})
    lines.append(f"enabled rules = {json.dumps(codes)}")
    print("\n".join(lines))
    return 0


def _target_torch(config: Config, options: RunOptions, paths: Sequence[Path]) -> str:
    """`target-torch = "2.6"  # where it comes from`: the torch the run's fixes target, decided
    as the run decides it, with the same scan of its Python files (none for standard
    input)."""
    tree = None
    if not options.in_memory:
        found = discover([p for p in paths if p.exists()], config,
                         force_exclude=options.force_exclude)
        tree = project.scan_tree(found, config.max_file_size)
    (major, minor), source = project.target_torch_source(config, tree)
    return f"target-torch = {json.dumps(f'{major}.{minor}')}  # {source}"

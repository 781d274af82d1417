"""`check --show-files` and `check --show-settings`: what a run would read, and with what."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from cudalint import rules as registry
from cudalint.config import DEFAULT_TARGET_TORCH, Config, parse_version
from cudalint.engine.project import facts as project
from cudalint.engine.running.discovery import discover
from cudalint.engine.running.project_facts import ProjectFacts
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
    """The settings a check of `path` uses (whatever else the run, `paths`, names): the
    configuration's
    (`target-torch` resolved, with where it comes from), the command line's selection, and
    the rules that run on it."""
    kind = classify(path)
    enabled = rules_for(path, selected_rules(registry, config, options), config)
    lines = [
        f"Resolved settings for: {display_path(path)}",
        f"Settings path: {config.source or 'none (defaults)'}",
        f"Project root: {_project_root(config, path)}",
        f"kind = {json.dumps(kind.value if kind else None)}",
    ]
    for name in config.FIELDS:
        if name == "target_torch":
            lines.append(_target_torch(config, options, path))
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


def _project_root(config: Config, path: Path) -> str:
    """The root the project facts of `path` come from (running/project_facts)."""
    if str(path) == "-":
        return "none (standard input has no file name)"
    return str(ProjectFacts(config, cache=False).root_of(path))


def _target_torch(config: Config, options: RunOptions, path: Path) -> str:
    """`target-torch = "2.6"  # where it comes from`: the torch the fixes of `path` target,
    decided as every run decides it, from its project (running/project_facts); standard input
    without a file name has none."""
    if str(path) == "-":
        stated = config.target_torch_tuple
        major, minor = stated or parse_version(DEFAULT_TARGET_TORCH)
        source = "[tool.cudalint]" if stated else "default (standard input has no project)"
        return f"target-torch = {json.dumps(f'{major}.{minor}')}  # {source}"
    facts = ProjectFacts(config, cache=options.cache)
    root = facts.root_of(path)
    (major, minor), source = project.target_torch_source(config, facts.tree(root), root)
    return f"target-torch = {json.dumps(f'{major}.{minor}')}  # {source}"

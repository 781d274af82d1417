"""Run the engine on source text in a temporary project, for rule tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cudalint.config import Config
from cudalint.engine.checkers.job import FileReport
from cudalint.engine.contract import Rule
from cudalint.engine.project import facts as project
from cudalint.engine.running.runner import RunOptions, check_file
from cudalint.finding import Finding
from cudalint.kinds import FileKind, classify
from cudalint.rules import all_rules


def _rules(codes: Sequence[str] | None) -> tuple[type[Rule], ...]:
    if codes is None:
        return all_rules()
    wanted = {code.upper() for code in codes}
    return tuple(rule for rule in all_rules() if rule.code in wanted)


def run_on(
    tmp_path: Path,
    source: str | bytes,
    *,
    name: str = "example.py",
    codes: Sequence[str] | None = None,
    fix: bool = False,
    unsafe: bool = False,
    config: Config | None = None,
    tree: bool = False,
) -> tuple[FileReport, bytes]:
    """Check (and fix) `source` written to tmp_path/name; returns the report and the file after.
    `tree`: with the settings a run over the file's tree gives (`facts.scan_tree`)."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(source.encode() if isinstance(source, str) else source)
    # A fixed target torch, so that version-gated fixes don't depend on what is installed.
    config = config or Config(root=tmp_path, target_torch="2.13")
    kind = classify(path) or FileKind.PYTHON
    options = RunOptions(fix=fix or unsafe, unsafe_fixes=unsafe, want_edits=True)
    settings = project.settings_for(config)
    if tree:  # as a run over this one file: what its scan of the tree finds (a nested setup.py)
        settings = project.with_tree(settings, project.scan_tree([(path, kind)],
                                                                 config.max_file_size))
    report = check_file(path, kind, _rules(codes), settings, options)
    return report, path.read_bytes()


def findings(tmp_path: Path, source: str, *, name: str = "example.py",
             codes: Sequence[str] | None = None) -> list[Finding]:
    return run_on(tmp_path, source, name=name, codes=codes)[0].findings


def codes_at(found: Sequence[Finding]) -> list[tuple[str | None, int, int]]:
    return sorted((f.code, f.location.row, f.location.column) for f in found)

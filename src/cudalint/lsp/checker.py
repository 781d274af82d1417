"""The engine, as the CLI runs it, on an editor's buffer: the configuration of the nearest
pyproject.toml (cached per folder), the rules for the path, `check_file` on the text."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from cudalint import rules as registry
from cudalint.config import Config, ConfigError, find_project_root, load_config
from cudalint.engine.checkers.job import (
    Checker,
    FileReport,
    Job,
    imported_helpers,
    isolated,
)
from cudalint.engine.contract import PythonRule, Rule
from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.first_pass.sparse import leaves, units_of
from cudalint.engine.lint.autofix import FixError, fix_python
from cudalint.engine.lint.python import BOM, lint_python
from cudalint.engine.project import facts as project
from cudalint.engine.reading import reader
from cudalint.engine.running import helpers
from cudalint.engine.running.discovery import discover
from cudalint.engine.running.helpers import HelperPlan
from cudalint.engine.running.project_facts import ProjectFacts
from cudalint.engine.running.runner import RunOptions, check_file, rules_for, selected_rules
from cudalint.engine.walk.context import Settings
from cudalint.finding import Finding
from cudalint.kinds import FileKind, classify, kind_of
from cudalint.lsp.incremental import UnitCache

# Notebook findings are placed by cell; a notebook's JSON text has no place for them.
UNCHECKED = frozenset({FileKind.NOTEBOOK, FileKind.SHARED_LIBRARY})
# Saving one of these changes the configuration or the project facts rules read.
PROJECT_FILES = frozenset({"pyproject.toml", "setup.py"})
_OPTIONS = RunOptions()
_WITH_EDITS = RunOptions(want_edits=True)
Rows = frozenset[int]  # 1-based rows of a document


@dataclass(frozen=True)
class Snapshot:
    """What a check reads of one version of a document (the worker never reads the workspace,
    which the loop changes)."""

    uri: str
    version: int | None
    text: str
    path: Path
    kind: FileKind | None  # None: a document cudalint does not check
    roots: tuple[Path, ...]
    encoding: str
    generation: int  # which configuration it was taken under
    rows: Rows | None = None  # what a check for code actions must cover (None: everything)


@dataclass(frozen=True)
class Project:
    """A folder's configuration and what follows from it, worked out once per path: an edit
    re-checks the buffer, not the configuration."""

    config: Config
    settings: Settings
    enabled: tuple[type[Rule], ...]
    root: Path  # the project's root (running/project_facts), where its facts come from
    _rules: dict[Path, tuple[type[Rule], ...]] = field(default_factory=dict, compare=False)
    _excluded: dict[tuple[Path, FileKind], bool] = field(default_factory=dict, compare=False)

    def rules_for(self, path: Path) -> tuple[type[Rule], ...]:
        if path not in self._rules:
            self._rules[path] = rules_for(path, self.enabled, self.config)
        return self._rules[path]

    def file_settings(self, path: Path, kind: FileKind, *,
                      existing_only: bool = True) -> Settings:
        """The settings of a buffer of this project, as `cudalint check` gives its file."""
        return project.file_settings(self.settings, self.config, path, kind,
                                     existing_only=existing_only, root=self.root)

    def excludes(self, path: Path, kind: FileKind) -> bool:
        """Whether the CLI would skip the file (`exclude`, `exclude-kinds`), as with
        --force-exclude: an editor opens library code it should not lint."""
        if (path, kind) not in self._excluded:
            self._excluded[path, kind] = _is_excluded(path, kind, self.config)
        return self._excluded[path, kind]


class Projects:
    """The project of each folder, loaded once until a project file is saved."""

    def __init__(self) -> None:
        self._by_folder: dict[Path, Project | ConfigError] = {}
        # the project facts of each configuration, shared by its folders (one scan a project)
        self._facts: dict[tuple[str, str], ProjectFacts] = {}

    def for_path(self, path: Path, roots: Sequence[Path] = ()) -> Project:
        """The project `path` belongs to; raises ConfigError for a bad configuration. Without
        a configuration file, the project is the workspace folder holding `path` (among
        `roots`), as when the CLI runs there."""
        folder = path.parent
        found = self._by_folder.get(folder)
        if found is None:  # one lookup: the event loop may clear the cache meanwhile
            found = self._by_folder[folder] = _load(folder, _workspace_root(folder, roots),
                                                    self._facts_of)
        if isinstance(found, ConfigError):
            raise found
        return found

    def facts_changed(self, path: Path) -> bool:
        """Whether the Python file saved at `path` now tells its project's scan something
        else (a class's own `cuda` method, `torch._six`, an extension): the project's facts,
        and every document's findings, must then be read again."""
        return any([facts.changed(path) for facts in list(self._facts.values())])

    def clear(self) -> None:
        self._by_folder.clear()
        self._facts.clear()

    def _facts_of(self, config: Config) -> ProjectFacts:
        key = (str(config.source), str(config.root))
        found = self._facts.get(key)
        if found is None:
            found = self._facts[key] = ProjectFacts(config)
        return found


def _workspace_root(folder: Path, roots: Sequence[Path]) -> Path:
    holding = [root for root in roots if root == folder or root in folder.parents]
    return max(holding, key=lambda root: len(root.parts), default=folder)


def _load(folder: Path, root: Path,
          facts_of: Callable[[Config], ProjectFacts]) -> Project | ConfigError:
    try:
        config = load_config(folder)
        if config.source is None and root != folder:
            config = Config(root=root.resolve())
        facts = facts_of(config)
        root = facts.root_of_folder(folder)
        return Project(config, facts.settings(root), selected_rules(registry, config, _OPTIONS),
                       root)
    except ConfigError as error:
        return error


def too_large(texts: Sequence[str], found: Project) -> str | None:
    """Why a document of these texts (a buffer, a notebook's cells) is not checked: more
    bytes than `max-file-size`, which the CLI skips a file over at once; None: it is checked."""
    limit = found.config.max_file_size
    size = sum(map(len, texts))  # characters: at most its bytes, at least a quarter of them
    if size * 4 > limit:
        size = sum(len(encode(text)) for text in texts)
    return reader.too_large(size, limit) if size > limit else None


def outside_any_project(folder: Path) -> bool:
    """Whether no folder at or above `folder` holds a pyproject.toml, a setup.py or a .git."""
    return find_project_root(folder) is None


def document_kind(path: Path, language_id: str | None) -> FileKind | None:
    """The kind of an open document: from its name, else Python when the editor says so."""
    kind = kind_of(path)
    if kind is None and language_id == "python":
        return FileKind.PYTHON
    return kind


def _is_excluded(path: Path, kind: FileKind, config: Config) -> bool:
    if kind.value in {k.lower() for k in config.exclude_kinds}:
        return True
    if classify(path) is None or not path.is_file():
        return False
    return not discover([path], config, force_exclude=True)


def check_text(path: Path, kind: FileKind, text: str, found: Project, *,
               edits: bool = False) -> list[Finding]:
    """The findings for a buffer; with `edits`, each fix with its text edits (a code action
    needs them, diagnostics do not)."""
    settings = found.file_settings(path, kind)
    report = check_file(path, kind, found.rules_for(path), settings,
                        _WITH_EDITS if edits else _OPTIONS, data=encode(text))
    return sorted(report.findings, key=Finding.sort_key)


def check_python_text(path: Path, text: str, found: Project, cache: UnitCache) -> list[Finding]:
    """The findings for a Python buffer, as `check_text` finds them; the engine reads only the
    units whose findings `cache` does not know (lsp/incremental.py)."""
    job = _python_job(path, encode(text), found)
    report = _loudly(lambda job: _check_reusing(job, cache), job)
    return sorted(report.findings, key=Finding.sort_key)


def check_python_rows(path: Path, text: str, found: Project, cache: UnitCache,
                      rows: frozenset[int]) -> list[Finding]:
    """The findings on `rows` (1-based) of a Python buffer, each fix with its edits, as
    `check_text(edits=True)` finds them there: the engine reads the units holding those rows
    and what every check reads (module-level code, the units other units' aliases come
    from). Findings elsewhere may be missing."""
    job = _python_job(path, encode(text), found)
    report = _loudly(lambda job: _check_rows(job, cache, rows), job)
    return sorted(report.findings, key=Finding.sort_key)


def _loudly(check: Checker, job: Job) -> FileReport:
    """`isolated(check, job)`, but an internal error is raised again: the server shows it
    (lsp/linter.failure_diagnostic) rather than the CLI's error line, which hides what went
    wrong. A file too deep or too large to check still gets the error line saying so."""
    failed: list[Exception] = []

    def noting(job: Job) -> FileReport:
        try:
            return check(job)
        except (RecursionError, MemoryError):
            raise
        except Exception as error:
            failed.append(error)
            raise

    report = isolated(noting, job)
    if failed:
        raise failed[0]
    return report


def _check_reusing(job: Job, cache: UnitCache) -> FileReport:
    source = job.data.removeprefix(BOM)
    tree = _tree(source, cache)
    plan = None if tree is None else cache.plan(
        source, tree, list(leaves(units_of(source, tree))), (job.python_rules, job.settings))
    result = lint_python(job.data, job.path, job.python_rules, job.settings,
                         prefilter=cache.prefilter(job.prefilter),
                         reuse=None if plan is None else plan.reuse, tree=tree,
                         shallow=cache.reparser.shallow)
    findings = result.findings if plan is None else cache.complete(plan, result)
    return FileReport(job.path, findings, result.text)


def _check_rows(job: Job, cache: UnitCache, rows: frozenset[int]) -> FileReport:
    source = job.data.removeprefix(BOM)
    tree = _tree(source, cache)
    skip = None if tree is None else cache.elsewhere(
        source, tree, list(leaves(units_of(source, tree))), rows)
    result = lint_python(job.data, job.path, job.python_rules, job.settings,
                         prefilter=cache.prefilter(job.prefilter), want_edits=True,
                         reuse=skip, tree=tree, shallow=cache.reparser.shallow)
    return FileReport(job.path, result.findings, result.text)


def _tree(source: bytes, cache: UnitCache) -> ast.Module | None:
    try:
        return cache.reparser.parse(source)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError,
            MemoryError):  # the engine reports why
        return None


def _python_job(path: Path, data: bytes, found: Project, *,
                existing_only: bool = True) -> Job:
    python_rules = tuple(r for r in found.rules_for(path) if issubclass(r, PythonRule))
    settings = found.file_settings(path, FileKind.PYTHON, existing_only=existing_only)
    return Job(path, FileKind.PYTHON, data, python_rules, (), settings,
               Prefilter.for_rules(python_rules, settings), _OPTIONS)


class FixedBuffer:
    """Fix-all's outcome: the buffer's new text, and the helper file the fixes import when
    the editor is to create or extend it in the same change (`helper.before` None: a new
    file)."""

    __slots__ = ("helper", "text")

    def __init__(self, text: str, helper: HelperPlan | None = None) -> None:
        self.text = text
        self.helper = helper


def fix_text(path: Path, text: str, found: Project, *,
             create_helper: bool = False) -> FixedBuffer | None:
    """The buffer with every safe fix applied, as `cudalint check --fix` writes it; None when
    nothing changes or the fixed code would not parse. With `create_helper` (a client that
    creates files in a workspace edit) the fixes import the project's helper where
    `cudalint check --fix` would, and the outcome says how that file must change; otherwise
    they import it where it defines what they call, else carry it inline."""
    job = _python_job(path, encode(text), found, existing_only=not create_helper)
    data = job.data
    try:
        outcome = fix_python(data, path, job.python_rules, job.settings,
                             prefilter=job.prefilter)
    except FixError:
        return None
    if outcome.data == data:
        return None
    fixed = outcome.data.decode("utf-8", errors="replace")
    names = frozenset() if job.settings.helper_file is None \
        else imported_helpers(fixed, job.settings.helper_module)
    if not names:
        return FixedBuffer(fixed)
    [helper] = helpers.plan([FileReport(path, [], helper=job.settings.helper_file,
                                        helper_names=names)])
    if helper.refused is not None:  # a link, a FIFO at its place: no fix importing it
        return None
    return FixedBuffer(fixed, None if helper.after == helper.before else helper)


@cache
def fix_names() -> frozenset[str]:
    """The names a fix may call or import whatever the code it replaces says: a top-level
    binding of one of them changes the fix (cudalint.engine.walk.context.helper_available)."""
    from cudalint.rules.cud1_device import cuda_api_table

    helpers = {api.helper for api in cuda_api_table.table().apis.values() if api.helper}
    return frozenset({"torch", "pick_device", *helpers})


def encode(text: str) -> bytes:
    # A lone surrogate cannot come from a file; it passes through so that the engine reports
    # the buffer as undecodable instead of the server failing.
    return text.encode("utf-8", errors="surrogatepass")

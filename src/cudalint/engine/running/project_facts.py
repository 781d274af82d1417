"""The one place every entry point (`check` with any paths, `--fix`, standard input with
`--stdin-filename`, the language server, `report`, `smoke`) asks for the facts of a file's
project, so that a file gets the same findings and fixes however a run reaches it.

A file's project is the nearest folder at or above it holding a pyproject.toml, a setup.py or
a .git (`config.find_project_root`; a file of an installed distribution, below
`site-packages/`, belongs to its top folder there), else the configuration's project
(`config.project_root`). Its facts come from that root's files (`facts.settings_for`: own
packages, extensions, torch floor) and from a scan of every Python file of its tree, found
from the root as a run of the root finds them (`discovery.project_python_files`): a class
with its own `cuda` method, `torch._six`, the extensions of nested setup.py files, the folders
holding its Python files (its namespace packages, `facts.namespace_packages`). The scan
reads a file only where the project scan's cache (`facts_cache`) does not know its status,
so a run over one file of a large project reads its project's files once, not on every run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from cudalint.config import Config, find_project_root, project_root
from cudalint.engine.project import facts as project
from cudalint.engine.reading.reader import ReadError, read_regular
from cudalint.engine.running import cache
from cudalint.engine.running.discovery import project_python_files
from cudalint.engine.running.facts_cache import FactsCache
from cudalint.engine.settings import Settings
from cudalint.kinds import FileKind

# Folders that hold installed distributions: a file below one belongs to the distribution's
# top folder, never to a project the environment happens to sit in.
_INSTALLED = frozenset({"site-packages", "dist-packages"})
_NOTHING: project.FileFacts = (False, False, False, ())  # a file that tells the scan nothing


class ProjectFacts:
    """The project facts of the files of one run (or of one language server's session, until
    a project file changes): each root's settings worked out once."""

    def __init__(self, config: Config, *, cache: bool = True, writing: bool = True) -> None:
        self.config = config
        self.cache = cache  # whether the scan's cache is used (`--no-cache`: not)
        self.writing = writing  # whether it is written (not by a fix: the lint cache's rule)
        self._roots: dict[str, Path] = {}
        self._settings: dict[Path, Settings] = {}
        self._root_facts: dict[Path, project.RootFacts] = {}
        self._trees: dict[Path, project.TreeFacts] = {}
        self._scanned: dict[Path, frozenset[str]] = {}  # each scanned root's Python files
        self._caches: dict[Path, FactsCache | None] = {}
        self._files: dict[str, project.FileFacts | None] = {}
        # the files each root's scan read (not from the cache): what the benchmark counts
        self.read = 0

    def root_of(self, path: Path) -> Path:
        """The root of the project `path` (a file, which need not exist) belongs to."""
        return self.root_of_folder(os.path.dirname(os.path.abspath(path)))

    def root_of_folder(self, folder: Path | str) -> Path:
        """The root of the project of the files in `folder`."""
        folder = os.path.abspath(folder)
        found = self._roots.get(folder)
        if found is None:
            found = self._roots[folder] = _root(Path(folder), self.config)
        return found

    def settings(self, root: Path) -> Settings:
        """The settings of every file of the project at `root`, before the helper's place."""
        found = self._settings.get(root)
        if found is None:
            known, tree = self.root_facts(root), self.tree(root)
            namespaces = project.namespace_packages(root, tree.source_folders,
                                                    self.root_of_folder)
            found = project.with_tree(project.settings_for(self.config, root, known), tree,
                                      namespaces)
            self._settings[root] = found
            self.save()
        return found

    def root_facts(self, root: Path) -> project.RootFacts:
        """What the files at the project's root say, through the scan's cache."""
        found = self._root_facts.get(root)
        if found is None:
            store = self._cache(root)
            found = (project.root_facts(root) if store is None
                     else store.root_facts(root, project.root_facts))
            self._root_facts[root] = found
        return found

    def for_file(self, path: Path, kind: FileKind, *, existing_only: bool = False,
                 fixing: bool = True) -> Settings:
        """The settings of one file: its project's, with the helper's place for it."""
        root = self.root_of(path)
        return project.file_settings(self.settings(root), self.config, path, kind,
                                     existing_only=existing_only, fixing=fixing, root=root,
                                     depends=self.root_facts(root).depends_on_cudalint)

    def tree(self, root: Path) -> project.TreeFacts:
        """What the scan of the project's Python files finds."""
        found = self._trees.get(root)
        if found is not None:
            return found
        files = project_python_files(root, self.config)
        self._scanned[root] = frozenset(files)
        store = self._cache(root)
        signature = None if store is None else _signature(files)
        found = None if signature is None or store is None else store.tree(signature)
        if found is None:
            found = project.scan_project(root, files, lambda path: self._facts(path, store))
            if signature is not None and store is not None:
                store.put_tree(signature, found)
        self._trees[root] = found
        self.save()
        return found

    def is_helper_copy(self, path: Path) -> bool:
        """Whether `path` (a Python file) is a copy of the device helper, which no run checks."""
        key = os.path.abspath(path)
        root = self.root_of(path)
        if key in self._scanned.get(root, ()):
            return Path(key) in self.tree(root).helper_copies
        found = self.file_facts(path)
        return found is not None and found[0]

    def file_facts(self, path: Path) -> project.FileFacts | None:
        """What the scan learns from one Python file (None: unreadable)."""
        return self._facts(os.path.abspath(path), self._cache(self.root_of(path)))

    def _facts(self, path: str, store: FactsCache | None) -> project.FileFacts | None:
        """`file_facts` of an absolute path, through `store` where there is one."""
        if path in self._files:
            return self._files[path]
        found = self._compute(path) if store is None else store.facts(path, self._compute)
        self._files[path] = found
        return found

    def changed(self, path: Path) -> bool:
        """Whether the Python file at `path`, read again, tells the scan of its project
        something else than it did (False where that project was not scanned)."""
        key = os.path.abspath(path)
        if self.root_of(path) not in self._trees:
            return False
        before = self._files.get(key)
        now = self._files[key] = self._compute(key)
        return (now or _NOTHING) != (before or _NOTHING)

    def save(self) -> None:
        for store in self._caches.values():
            if store is not None:
                store.save()

    def _cache(self, root: Path) -> FactsCache | None:
        if root not in self._caches:
            self._caches[root] = (FactsCache.open(root, writing=self.writing) if self.cache
                                  else None)
        return self._caches[root]

    def _compute(self, path: str) -> project.FileFacts | None:
        self.read += 1
        try:
            data = read_regular(path, self.config.max_file_size)
        except ReadError:  # reported when the file is checked
            return None
        return project.project_file_facts(path, data)


def _signature(files: list[str]) -> str | None:
    """What stands for the content of every file of a scan: their paths and statuses (None
    when one changed too recently for its status to stand for it: `cache.file_status`'s
    rule, inlined, since a large project asks it of thousands of files on every run)."""
    settled = time.time_ns() - cache._SETTLED_NS
    parts = []
    for path in files:
        try:
            s = os.stat(path)
        except OSError:
            return None
        if s.st_ctime_ns > settled or s.st_mtime_ns > settled:
            return None
        parts.append(f"{path}\0{s.st_size}\0{s.st_mtime_ns}\0{s.st_ctime_ns}\0{s.st_ino}"
                     f"\0{s.st_dev}")
    return cache._digest("\n".join(parts).encode()).hexdigest()


def _root(folder: Path, config: Config) -> Path:
    parts = folder.parts
    installed = [i for i, part in enumerate(parts) if part in _INSTALLED]
    if installed and installed[-1] + 1 < len(parts):
        return Path(*parts[:installed[-1] + 2]).resolve()
    return find_project_root(folder) or project_root(config)

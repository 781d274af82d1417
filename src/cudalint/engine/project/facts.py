"""Facts about the project being checked that rules need: its own packages (never reported
as CUDA-only libraries, as ruff's known-first-party) and its compiled CUDA extensions."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from cudalint.config import DEFAULT_TARGET_TORCH, Config, parse_version, project_root
from cudalint.data import load_toml
from cudalint.engine.project.helper_place import (
    INLINE,
    configured_helper_file,
    helper_place,
    is_helper_copy,
)
from cudalint.engine.project.torch_floor import (
    OLD_TORCH,
    OLD_TORCH_SIGNAL,
    declares,
    documented_floor_source,
    torch_floor_source,
)
from cudalint.engine.reading.reader import ReadError, read_regular, read_text
from cudalint.engine.settings import HELPER_MODULE_DEFAULT, Settings, SetupFacts
from cudalint.kinds import FileKind
from cudalint.record import Record

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from typing import Any


def settings_for(config: Config, root: Path | None = None,
                 known: RootFacts | None = None) -> Settings:
    """The settings of the files of the project at `root` (None: the configuration's folder),
    from the project's own files at its root (`known`: what `root_facts` read of them, where
    a cache kept it), never from which files a run was given (the tree's facts are
    `with_tree`'s)."""
    root = config.root if root is None else root
    known = root_facts(root) if known is None else known
    stated = (config.target_torch_tuple if config.target_torch_tuple is not None
              else None if known.floor is None else known.floor[0])
    return Settings(
        helper_module=config.helper or HELPER_MODULE_DEFAULT,
        target_torch=stated or _assumed(known.documented),
        torch_stated=stated is not None,
        first_party=(frozenset(config.known_first_party) | first_party_packages(root)
                     | known.setup.packages | known.names),
        extension_modules=known.setup.cuda_extensions,
    )


class RootFacts(Record):
    """What a project's files at its root say (`root_facts`): plain values, which the project
    scan's cache keeps by the status of `root_fact_files` (reading them parses TOML, and a
    setup.py with LibCST)."""

    __slots__ = ("depends_on_cudalint", "documented", "floor", "names", "setup")
    FIELDS = ("setup", "names", "floor", "documented", "depends_on_cudalint")

    def __init__(self, setup: SetupFacts, names: frozenset[str],
                 floor: tuple[tuple[int, int], str] | None,
                 documented: tuple[tuple[int, int], str] | None,
                 depends_on_cudalint: bool) -> None:
        self.setup = setup  # what setup.py declares
        self.names = names  # pyproject_names
        self.floor = floor  # torch_floor_source
        self.documented = documented  # documented_floor_source
        self.depends_on_cudalint = depends_on_cudalint

    def to_json(self) -> list[object]:
        setup = self.setup
        return [sorted(setup.cuda_extensions), sorted(setup.packages), list(setup.requires),
                sorted(self.names), self.floor, self.documented, self.depends_on_cudalint]

    @classmethod
    def from_json(cls, value: list[Any]) -> RootFacts:
        """The facts `to_json` gave; ValueError, TypeError, IndexError for another shape."""
        extensions, packages, requires, names, floor, documented, depends = value
        strings = [*extensions, *packages, *requires, *names]
        if not all(isinstance(s, str) for s in strings) or not isinstance(depends, bool):
            raise ValueError("not root facts")
        return cls(SetupFacts(frozenset(extensions), frozenset(packages), tuple(requires)),
                   frozenset(names), _sourced(floor), _sourced(documented), depends)


def _sourced(value: Any) -> tuple[tuple[int, int], str] | None:
    if value is None:
        return None
    version, source = value
    major, minor = version
    if not (isinstance(major, int) and isinstance(minor, int) and isinstance(source, str)):
        raise ValueError("not a floor")
    return (major, minor), source


def root_facts(root: Path) -> RootFacts:
    """What the files at the project's root say (`root_fact_files`)."""
    setup = setup_facts(root)
    return RootFacts(setup, pyproject_names(root), torch_floor_source(root, setup),
                     documented_floor_source(root), declares(root, setup, "cudalint"))


# The files at a project's root that `root_facts` reads, by pattern (torch_floor's files;
# every YAML file, which may be a conda environment by its content: kinds.conda_environments).
_ROOT_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "requirements*.txt",
               "requirements/*.txt", "*.yml", "*.yaml", "README*")


def root_fact_files(root: Path) -> list[Path]:
    """The files `root_facts` reads: its answer changes only when one of them does (or one
    is added or removed)."""
    return sorted({path for pattern in _ROOT_FILES for path in root.glob(pattern)})


def _assumed(documented: tuple[tuple[int, int], str] | None) -> tuple[int, int]:
    default = parse_version(DEFAULT_TARGET_TORCH)
    return documented[0] if documented is not None and documented[0] < default else default


def unknown_project_settings(config: Config) -> Settings:
    """The settings of a buffer whose project cannot be known (standard input without a file
    name): only what the configuration states; every finding that depends on a project fact
    is the conservative one (no own package exempts an import from CUD201)."""
    stated = config.target_torch_tuple
    return Settings(
        helper_module=config.helper or HELPER_MODULE_DEFAULT,
        target_torch=stated or parse_version(DEFAULT_TARGET_TORCH),
        torch_stated=stated is not None,
        first_party=frozenset(config.known_first_party),
    )


def stated_torch(config: Config, setup: SetupFacts,
                 root: Path | None = None) -> tuple[int, int] | None:
    """The torch the fixes must work on: the `target-torch` setting, else the oldest torch the
    project's files allow; None where neither says (the run assumes DEFAULT_TARGET_TORCH,
    never the installed torch)."""
    found = stated_torch_source(config, setup, root)
    return None if found is None else found[0]


def stated_torch_source(config: Config, setup: SetupFacts,
                        root: Path | None = None) -> tuple[tuple[int, int], str] | None:
    """`stated_torch`, and where it is stated: `[tool.cudalint]` (or the configuration file's
    name, for a cudalint.toml), else the file of the project at `root` (None: the
    configuration's folder) with the lowest bound."""
    if config.target_torch_tuple is not None:
        name = config.source.name if config.source is not None else "pyproject.toml"
        return config.target_torch_tuple, "[tool.cudalint]" if name == "pyproject.toml" else name
    return torch_floor_source(config.root if root is None else root, setup)


def assumed_torch(root: Path) -> tuple[int, int]:
    """The torch the fixes assume where the project states none: DEFAULT_TARGET_TORCH, or the
    older torch its README names. The fixes that need a torch are then unsafe
    (`Settings.torch_stated`), and those that need a newer one are not offered."""
    return assumed_torch_source(root)[0]


def assumed_torch_source(root: Path) -> tuple[tuple[int, int], str]:
    """`assumed_torch`, and why: the default, or the README that lowers it."""
    default = parse_version(DEFAULT_TARGET_TORCH)
    documented = documented_floor_source(root)
    if documented is not None and documented[0] < default:
        return documented[0], f"{documented[1]} (lowers the default)"
    return default, "default (the project states no torch floor)"


def with_tree(settings: Settings, tree: TreeFacts,
              namespaces: frozenset[str] = frozenset()) -> Settings:
    """`settings` with what the scan of the project's Python files found: a `cuda` method of
    its own; the CUDA extensions of every setup.py in the tree (per-extension folders); code
    that runs only on a torch older than 2.0 (`torch._six`), which lowers the torch the fixes
    assume to OLD_TORCH where the project states none; its namespace packages (`namespaces`:
    `namespace_packages` of the tree's `source_folders`), which are its own."""
    if not namespaces <= settings.first_party:
        settings = settings.replace(first_party=settings.first_party | namespaces)
    if tree.own_cuda_method:
        settings = settings.replace(own_cuda_method=True)
    if not tree.extension_modules <= settings.extension_modules:
        settings = settings.replace(
            extension_modules=settings.extension_modules | tree.extension_modules)
    if not settings.torch_stated and _lowered_by_tree(settings.target_torch, tree):
        settings = settings.replace(target_torch=OLD_TORCH)
    return settings


def target_torch_source(config: Config, tree: TreeFacts | None,
                        root: Path | None = None) -> tuple[tuple[int, int], str]:
    """The torch the fixes of the project at `root` target (`with_tree(settings_for(config,
    root), tree)`'s; `tree` None: without a tree scan), and where it comes from, as
    `--show-settings` says it."""
    root = config.root if root is None else root
    stated = stated_torch_source(config, setup_facts(root), root)
    if stated is not None:
        return stated
    assumed = assumed_torch_source(root)
    if tree is not None and _lowered_by_tree(assumed[0], tree):
        return OLD_TORCH, f"{OLD_TORCH_SIGNAL.decode()} in the code"
    return assumed


def _lowered_by_tree(assumed: tuple[int, int], tree: TreeFacts) -> bool:
    """Whether code that runs only before torch 2.0 lowers the torch assumed to OLD_TORCH."""
    return tree.old_torch and assumed > OLD_TORCH


# A `cuda` method's header, from its `def` (a pattern starting with a literal: `re` finds its
# candidates ten times faster than with `^[ \t]+` before it); compiled on its first use, by
# re's cache: a run replayed from the cache reads no file.
_CUDA_DEF = rb"def[ \t]+cuda[ \t]*\("


class TreeFacts(Record):
    """What one scan of the checked Python files finds."""

    __slots__ = ("extension_modules", "helper_copies", "old_torch", "own_cuda_method",
                 "source_folders")
    FIELDS = ("own_cuda_method", "helper_copies", "old_torch", "extension_modules",
              "source_folders")

    def __init__(self, own_cuda_method: bool = False,
                 helper_copies: frozenset[Path] = frozenset(), old_torch: bool = False,
                 extension_modules: frozenset[str] = frozenset(),
                 source_folders: frozenset[str] = frozenset()) -> None:
        self.own_cuda_method = own_cuda_method  # a class defines `def cuda(self, ...)`
        self.helper_copies = helper_copies  # copies of the device helper
        self.old_torch = old_torch  # code names an API removed in torch 2.0
        # what the CUDAExtension calls of the setup.py files checked build
        self.extension_modules = extension_modules
        self.source_folders = source_folders  # `source_folders` of the files scanned


def scan_tree(found: Iterable[tuple[Path, FileKind]], limit: int,
              facts_of: Callable[[Path], Sequence[bool] | None] | None = None) -> TreeFacts:
    """A plain text scan of the Python files (of at most `limit` bytes), far cheaper than
    parsing them. `facts_of` gives a file's `file_facts` (None: unreadable) where the lint
    cache knows them; without it each file is read."""
    own, copies, old = False, set(), False
    setups: list[Path] = []
    for path, kind in found:
        if kind is not FileKind.PYTHON:
            continue
        if path.name == "setup.py":
            setups.append(path)
        facts = facts_of(path) if facts_of is not None else _read_facts(path, limit)
        if facts is None:  # reported when the file is checked
            continue
        helper_copy, cuda_method, old_torch = facts
        if helper_copy:
            copies.add(path)
        own = own or cuda_method
        old = old or old_torch
    return TreeFacts(own, frozenset(copies), old, _setup_extensions(setups, limit))


# What the project scan learns from one Python file: `file_facts`'s three, and for a setup.py
# the modules its `CUDAExtension(...)` calls build (plain JSON: the scan's cache keeps it).
FileFacts = tuple[bool, bool, bool, tuple[str, ...]]


def project_file_facts(path: str, data: bytes) -> FileFacts:
    """What the scan of a project's tree learns from one Python file (`path`, read as
    `data`): a plain text search, and LibCST only for a setup.py that names an extension."""
    helper_copy, cuda_method, old_torch = file_facts(data)
    extensions: tuple[str, ...] = ()
    if os.path.basename(path) == "setup.py" and b"Extension" in data:
        from cudalint.engine.project.setup_py import read_setup  # LibCST: only for such files

        extensions = tuple(sorted(read_setup(data.decode("utf-8", "replace")).cuda_extensions))
    return helper_copy, cuda_method, old_torch, extensions


def scan_project(root: Path, files: Sequence[str],
                 facts_of: Callable[[str], FileFacts | None]) -> TreeFacts:
    """The tree facts of the project at `root` from its Python files (`files`: every one of
    them, found from its root, whatever a run was given), each file's facts from `facts_of`
    (None: unreadable, reported when the file is checked)."""
    own, copies, old = False, set(), False
    extensions: set[str] = set()
    for path in files:
        facts = facts_of(path)
        if facts is None:
            continue
        helper_copy, cuda_method, old_torch, built = facts
        if helper_copy:
            copies.add(Path(path))
        own = own or cuda_method
        old = old or old_torch
        extensions.update(built)
    return TreeFacts(own, frozenset(copies), old, frozenset(extensions),
                     source_folders(root, files))


def _setup_extensions(setups: Iterable[Path], limit: int) -> frozenset[str]:
    """The modules the `CUDAExtension(...)` calls of these setup.py files build: one per
    extension folder (`ext_a/setup.py`) as often as the project's root one. A file that
    names no extension is not parsed."""
    names: set[str] = set()
    for path in setups:
        try:
            data = read_regular(path, limit)
        except ReadError:  # reported when the file is checked
            continue
        if b"Extension" not in data:
            continue
        from cudalint.engine.project.setup_py import read_setup  # LibCST: only for such files

        names |= read_setup(data.decode("utf-8", "replace")).cuda_extensions
    return frozenset(names)


def file_facts(data: bytes) -> tuple[bool, bool, bool]:
    """What the tree scan learns from a Python file: whether it is a copy of the device
    helper, whether it defines a `cuda` method, and whether it names an API removed in torch
    2.0 (`torch._six`: also a `try` that falls back to the new name says the project runs on
    an old torch)."""
    if is_helper_copy(data):
        return True, False, False
    return (False, b"def" in data and _defines_cuda_method(data),
            OLD_TORCH_SIGNAL in data)


def _defines_cuda_method(data: bytes) -> bool:
    """A `def cuda(` indented at the start of its line: a method (or a nested function)."""
    for found in re.finditer(_CUDA_DEF, data):
        indent = data[data.rfind(b"\n", 0, found.start()) + 1 : found.start()]
        if indent and not indent.strip(b" \t"):
            return True
    return False


def _read_facts(path: Path, limit: int) -> tuple[bool, bool, bool] | None:
    try:
        return file_facts(read_regular(path, limit))
    except ReadError:
        return None


def file_settings(settings: Settings, config: Config, path: Path, kind: FileKind, *,
                  existing_only: bool = False, fixing: bool = True,
                  root: Path | None = None, depends: bool | None = None) -> Settings:
    """The settings for one file of the project at `root` (None: the configuration's
    project): its own standalone helper module when the configuration names none and the
    project does not depend on cudalint (`depends`: whether it does, where known); the
    configured helper's file where `--fix` must write it
    (engine.project.helper_place.configured_helper_file). `existing_only` (the editor, which
    cannot create the helper's file): only when that file exists."""
    if config.helper:
        if existing_only or not fixing:
            return settings
        written = configured_helper_file(project_root(config), config.helper)
        return settings if written is None else settings.replace(helper_file=written)
    root = project_root(config) if root is None else root
    if depends_on_cudalint(root) if depends is None else depends:
        return settings
    place = helper_place(path, kind, root, fixing=fixing)
    if existing_only and place.path is not None:  # the editor and stdin write one file
        defined = _helper_names(place.path)
        if defined is None:  # no helper yet: the fixes carry it
            place = INLINE
        else:
            return settings.replace(helper_module=place.module, helper_file=place.path,
                                    helper_defines=defined)
    return settings.replace(helper_module=place.module, helper_file=place.path)


def _helper_names(path: Path) -> frozenset[str] | None:
    """The names the helper at `path` defines (a helper written for some fixes may lack what
    another needs, which the editor cannot add); None where there is no such file. One stat
    per call; the file is read once per version (the editor asks on every edit)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return _helper_version_names(path, info.st_mtime_ns, info.st_size)


@lru_cache(maxsize=64)
def _helper_version_names(path: Path, _mtime_ns: int, _size: int) -> frozenset[str] | None:
    from cudalint.runtime.helper import module_names

    text = read_text(path)
    return None if text is None else module_names(text)


@lru_cache(maxsize=8)
def depends_on_cudalint(root: Path) -> bool:
    return declares(root, setup_facts(root), "cudalint")


def first_party_packages(root: Path) -> frozenset[str]:
    """The top-level modules of the project's layout, at its root and in `src/`, as ruff's
    `known-first-party` finds them: a package (`pkg/__init__.py`) or a module of one file
    (`pynvml.py`, `vllm.pyi`). A folder without `__init__.py` is a namespace package when it
    holds a Python file (`namespace_packages`: the tree scan finds them)."""
    names: set[str] = set()
    for base in (root, root / "src"):  # its source roots: ruff's default `src`
        try:
            children = list(base.iterdir()) if base.is_dir() else []
        except OSError:  # unreadable: the run reports the folder
            continue
        for child in children:
            if child.suffix in (".py", ".pyi"):
                names.add(child.stem)
            elif _is_package(child):
                names.add(child.name)
    return frozenset(names)


def source_folders(root: Path, files: Iterable[str]) -> frozenset[str]:
    """The folders at the project's source roots (its root and `src/`) that hold one of
    `files` (absolute paths below `root`) at any depth, relative to `root` (`deepspeed`,
    `src/flashinfer`): the candidates for `namespace_packages`. A folder of kernels or data
    (`cuda/` of .cu files, an empty one) holds none."""
    base = os.path.join(os.path.realpath(root), "")
    found: set[str] = set()
    for path in files:
        if not path.startswith(base):
            continue
        parts = path[len(base):].split(os.sep, 2)
        if len(parts) > 1:
            found.add(parts[0])
        if len(parts) > 2 and parts[0] == "src":
            found.add(f"{parts[0]}/{parts[1]}")
    return frozenset(found)


def namespace_packages(root: Path, folders: Iterable[str],
                       root_of: Callable[[Path], Path]) -> frozenset[str]:
    """The names Python imports these `source_folders` of the project at `root` by (a folder
    holding a Python file is a package, with or without `__init__.py`, as ruff's
    `known-first-party` counts it), but for a folder that is a project of its own (`root_of`:
    the project of a folder's files; a clone of a library's repository, `apex/` with its own
    setup.py or .git, whose package is installed: an installed package comes before a
    namespace package)."""
    return frozenset(Path(folder).name for folder in folders
                     if root_of(root / folder) == root)


def _is_package(folder: Path) -> bool:
    try:
        return (folder / "__init__.py").is_file()
    except OSError:
        return False


def setup_facts(root: Path) -> SetupFacts:
    """What the project's setup.py declares (read, never executed)."""
    text = read_text(root / "setup.py")
    if text is None:
        return SetupFacts()
    from cudalint.engine.project.setup_py import read_setup  # LibCST: only for a project with one

    return read_setup(text)


def extension_modules(root: Path) -> frozenset[str]:
    """Modules named by `CUDAExtension(...)` in the project's setup.py."""
    return setup_facts(root).cuda_extensions


def pyproject_names(root: Path) -> frozenset[str]:
    """The import name of the project's own distribution (`flash-attn` -> `flash_attn`)."""
    text = read_text(root / "pyproject.toml")
    if text is None:
        return frozenset()
    try:
        document = load_toml(text)
    except (ValueError, RecursionError):  # TOMLDecodeError is a ValueError
        return frozenset()
    names = [_get(document, "project", "name"), _get(document, "tool", "poetry", "name")]
    return frozenset(re.sub(r"[-.]+", "_", n).lower() for n in names if isinstance(n, str))


def _get(table: object, *keys: str) -> object:
    """`table[k1][k2]...`, or None where a level is missing or not a table."""
    for key in keys:
        if not isinstance(table, dict):
            return None
        table = table.get(key)
    return table

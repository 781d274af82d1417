"""`[tool.cudalint]` in the nearest pyproject.toml, as ruff reads `[tool.ruff]`."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from cudalint.data import LONG_NUMBER, load_toml, toml
from cudalint.files import ReadError, TooLarge, read_regular
from cudalint.record import Record

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from typing import Any

# The torch a project is assumed to support when neither `target-torch` nor its own files
# (requirements, pyproject, setup.py/cfg, environment.yml) say: a fixed version, never the
# installed torch, so that one command gives the same fixes with and without torch installed.
DEFAULT_TARGET_TORCH = "2.6"
# Larger files are skipped with an error line: LibCST takes about 0.7 GB per MB of source.
DEFAULT_MAX_FILE_SIZE = 4 * 1024 * 1024
# The memory one file's check may take: its worker process is capped at it (RLIMIT_AS), and a
# Python file whose size predicts more is skipped with a line.
DEFAULT_MAX_MEMORY = 4 * 1024 * 1024 * 1024
# The severities `fail-on` takes, worst first: a run fails (exit 1) on a finding at least as
# severe as it. The default leaves info findings (harmless off CUDA) out, so that they alone
# never block a commit or CI; they are still printed.
FAIL_ON = ("error", "warning", "info")
DEFAULT_FAIL_ON = "warning"
# ruff's default excludes, and cudalint's cache and bytecode folders.
DEFAULT_EXCLUDE = (
    ".bzr", ".cudalint_cache", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg",
    ".ipynb_checkpoints", ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache",
    ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode", "__pycache__",
    "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages",
    "venv",
)
# A configuration file is read up to this size; a larger one is an error line, never read whole.
MAX_CONFIG_SIZE = 1024 * 1024
# The bounds of the byte sizes (`max-file-size`, `max-memory`): a worker's memory cap is set
# from `max-memory` (RLIMIT_AS, a C long), and one under the least a check needs fails every
# file with a MemoryError.
_MAX_BYTES = 1 << 50
_MIN_MEMORY = 64 * 1024 * 1024
_KEYS = frozenset(
    {
        "select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude",
        "exclude-kinds", "helper", "target-torch", "known-first-party", "respect-gitignore",
        "max-file-size", "max-memory", "fail-on",
    }
)


_TYPE_NAMES = {list: "a list", dict: "a table", str: "a string", int: "a whole number",
               bool: "true or false"}


class Selection:
    """One source's choice of rules (the configuration, the command line): its `select`
    (None: it keeps what the sources before it chose), `extend-select` and `ignore`. (A
    plain class: a dataclass compiles its methods at import, in a replayed run's start-up.)"""

    __slots__ = ("extend_select", "ignore", "select")

    def __init__(self, select: Sequence[str] | None, extend_select: Sequence[str] = (),
                 ignore: Sequence[str] = ()) -> None:
        self.select = select
        self.extend_select = extend_select
        self.ignore = ignore

    def __repr__(self) -> str:  # the lint cache's key holds it
        return f"Selection({self.select!r}, {self.extend_select!r}, {self.ignore!r})"


class ConfigError(Exception):
    """A configuration that cannot be used; the CLI prints it on one line and exits 2."""


class Config(Record):
    """The settings of `[tool.cudalint]` (a mutable record, compared by value)."""

    __slots__ = ("exclude", "exclude_kinds", "extend_exclude", "extend_select", "fail_on",
                 "helper", "ignore", "known_first_party", "max_file_size", "max_memory",
                 "per_file_ignores", "respect_gitignore", "root", "select", "source",
                 "target_torch")
    FIELDS = ("root", "source", "select", "ignore", "extend_select", "per_file_ignores",
              "exclude", "extend_exclude", "exclude_kinds", "helper", "target_torch",
              "known_first_party", "respect_gitignore", "max_file_size", "max_memory",
              "fail_on")
    __hash__ = None  # type: ignore[assignment]

    def __init__(
        self,
        root: Path,  # the folder of the pyproject.toml, or the current folder
        source: Path | None = None,  # the file the settings came from
        select: list[str] | None = None,  # None: ["ALL"]
        ignore: list[str] | None = None,
        extend_select: list[str] | None = None,
        per_file_ignores: dict[str, list[str]] | None = None,
        exclude: list[str] | None = None,  # None: DEFAULT_EXCLUDE
        extend_exclude: list[str] | None = None,
        exclude_kinds: list[str] | None = None,
        # "": the standalone helper written into the project (cudalint.engine.project.helper_place),
        # or cudalint.device when the project depends on cudalint.
        helper: str = "",
        target_torch: str = "",  # "": the project's own torch floor, else DEFAULT_TARGET_TORCH
        known_first_party: list[str] | None = None,
        respect_gitignore: bool = True,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,  # bytes; larger files are skipped
        max_memory: int = DEFAULT_MAX_MEMORY,  # bytes one file's check may take
        fail_on: str = DEFAULT_FAIL_ON,  # the least severity that fails a run: one of FAIL_ON
    ) -> None:
        self.root = root
        self.source = source
        self.select = ["ALL"] if select is None else select
        self.ignore = [] if ignore is None else ignore
        self.extend_select = [] if extend_select is None else extend_select
        self.per_file_ignores = {} if per_file_ignores is None else per_file_ignores
        self.exclude = list(DEFAULT_EXCLUDE) if exclude is None else exclude
        self.extend_exclude = [] if extend_exclude is None else extend_exclude
        self.exclude_kinds = [] if exclude_kinds is None else exclude_kinds
        self.helper = helper
        self.target_torch = target_torch
        self.known_first_party = [] if known_first_party is None else known_first_party
        self.respect_gitignore = respect_gitignore
        self.max_file_size = max_file_size
        self.max_memory = max_memory
        self.fail_on = fail_on

    @property
    def target_torch_tuple(self) -> tuple[int, int] | None:
        """The `target-torch` setting; None when it is not set."""
        return parse_version(self.target_torch) if self.target_torch else None


def parse_version(text: str) -> tuple[int, int]:
    match = re.match(r"^\s*(\d{1,9})\.(\d{1,9})(?!\d)", text)
    if match is None:
        raise ConfigError(f"target-torch: {text!r} is not a version such as '2.6'")
    return int(match.group(1)), int(match.group(2))


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml above `start` that has a [tool.cudalint] table."""
    found = _find_table(start)
    return None if found is None else found[0]


def _find_table(start: Path) -> tuple[Path, Mapping[str, Any]] | None:
    """The nearest pyproject.toml above `start` whose TOML holds a `tool.cudalint` table, in
    any spelling (`[tool]` and a dotted key, an inline table, `[ tool."cudalint" ]`), and the
    table. Only a file whose bytes name cudalint is parsed (a run imports no TOML parser for
    a pyproject.toml without the word)."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else start.parents:
        candidate = folder / "pyproject.toml"
        if not candidate.is_file():
            continue
        data = _read_bytes(candidate)
        if b"cudalint" not in data or not _may_name_the_table(data):
            continue
        tool = _parsed(candidate, data).get("tool")
        table = tool.get("cudalint") if isinstance(tool, dict) else None
        if table is None:
            continue
        if not isinstance(table, dict):
            raise ConfigError(f"{candidate}: [tool.cudalint] must be a table")
        require_no_long_number(table, candidate)
        return candidate, table
    return None


# What makes a folder a project's root: the nearest folder at or above a file holding one of
# these is where its project facts (own packages, extensions, torch floor) are read from.
ROOT_MARKERS = ("pyproject.toml", "setup.py")


def find_project_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` holding a pyproject.toml, a setup.py or a .git
    (a folder with its own setup.py inside a larger repository is a project of its own)."""
    start = start.resolve()
    for candidate in [start, *start.parents]:
        if any((candidate / name).is_file() for name in ROOT_MARKERS) \
                or (candidate / ".git").exists():
            return candidate
    return None


def project_root(config: Config) -> Path:
    """The project's root: the configuration's folder, else the nearest folder holding a
    pyproject.toml, a setup.py or a .git, else the current folder when the run is inside it
    (as ruff)."""
    if config.source is not None:
        return config.root
    found = find_project_root(config.root)
    if found is not None:
        return found
    here = Path.cwd().resolve()
    return here if here == config.root or here in config.root.parents else config.root


def load_config(start: Path, explicit: Path | None = None) -> Config:
    """Settings for a run over paths under `start`; `explicit` is `--config PATH`."""
    if explicit is None:
        found = _find_table(start)
        if found is None:
            return Config(root=start.resolve() if start.is_dir() else start.resolve().parent)
        return _from_table(found[1], found[0])
    path = explicit
    if not path.is_file():
        raise ConfigError(f"{path}: no such configuration file")
    document = read_document(path)
    tool = document.get("tool")
    table = tool.get("cudalint", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.cudalint] must be a table")
    if path.name != "pyproject.toml" and not table:
        table = document  # a cudalint.toml holds the settings at the top level
    require_no_long_number(table, path)
    return _from_table(table, path)


def require_no_long_number(value: object, path: Path, key: str = "") -> None:
    """ConfigError where cudalint's own table holds an integer too long to read (one in
    another tool's table is no concern of cudalint's: data.load_toml)."""
    if isinstance(value, dict):
        for name, item in value.items():
            require_no_long_number(item, path, f"{key}.{name}" if key else str(name))
    elif isinstance(value, list):
        for item in value:
            require_no_long_number(item, path, key)
    elif isinstance(value, str) and value.startswith(LONG_NUMBER):
        limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
        raise ConfigError(f"{path}: invalid TOML: {value.removeprefix(LONG_NUMBER)}: {key}: "
                          f"a number of more than {limit} digits")


# Where the bytes `cudalint` can be a key of a TOML text (bare or quoted): after the start of a
# line, `{` or `,` (a key, an inline table's key) or `.` (a dotted key, a header's part), and
# before `.` or `=`, or `]` after a `.` (a header's last part); spaces and tabs around. Every
# spelling of the `tool.cudalint` table has one: a text with none (`"cudalint>=0.2"` in a list
# of dependencies, a script's value) is not parsed.
_BEFORE_KEY = frozenset(b".\n{,")
BOM = b"\xef\xbb\xbf"
_AFTER_KEY = frozenset(b".=")


def _may_name_the_table(data: bytes) -> bool:
    """Whether `data` may hold the table: a cheap test that spares a run the TOML parser for a
    pyproject.toml naming cudalint only as a dependency or a value. It never says no to a
    text that holds the table, in any spelling TOML allows (the parser decides)."""
    at = data.find(b"cudalint")
    while at >= 0:
        line = data[data.rfind(b"\n", 0, at) + 1:at].lstrip(b" \t").removeprefix(BOM)
        if line.lstrip(b" \t").startswith(b"["):
            return True  # a table's header, even a broken one (the parser says so)
        before, after = data[:at].rstrip(b" \t"), data[at + 8:at + 72]
        quote = before[-1:] if before[-1:] in (b'"', b"'") else b""
        if quote:
            before = before[:-1].rstrip(b" \t")
        if after.startswith(quote):
            after = after[len(quote):].lstrip(b" \t")
            previous, following = before[-1:], after[:1]
            if (not previous or previous[0] in _BEFORE_KEY) and following and (
                    following[0] in _AFTER_KEY or (following == b"]" and previous == b".")):
                return True
        at = data.find(b"cudalint", at + 8)
    return False


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, a regular file of at most MAX_CONFIG_SIZE: else an error."""
    try:
        return read_regular(path, MAX_CONFIG_SIZE)
    except TooLarge:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_SIZE // 1024 // 1024} MiB, the most "
                          "a configuration file may hold; not read") from None
    except ReadError as error:
        raise ConfigError(f"{path}: {error}") from None


def read_document(path: Path, word: bytes = b"") -> dict[str, Any]:
    """The TOML document in `path`, a regular file of at most MAX_CONFIG_SIZE, or {} where its
    bytes do not hold `word` (not parsed); ConfigError where it cannot be read or parsed."""
    data = _read_bytes(path)
    return _parsed(path, data) if word in data else {}


def _parsed(path: Path, data: bytes) -> dict[str, Any]:
    tomllib = toml()
    try:
        document: dict[str, Any] = load_toml(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: cannot read: {error}") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from error
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: arrays or tables nested too deeply") from None
    except ValueError as error:  # a whole number of more digits than int() takes
        raise ConfigError(f"{path}: invalid TOML: {_too_long_number(data) or error}") from None
    return document


def _too_long_number(data: bytes) -> str | None:
    """Where `data` holds a run of digits longer than int() converts, and its key."""
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
    found = re.search(rb"[0-9_]{%d,}" % (limit + 1), data)
    if found is None:
        return None
    start = data.rfind(b"\n", 0, found.start()) + 1
    key = data[start:found.start()].partition(b"=")[0].strip().decode("utf-8", "replace")
    row = data.count(b"\n", 0, found.start()) + 1
    return f"line {row}: {key or 'a value'}: a number of more than {limit} digits"


# Tables of [tool.cudalint] that a subcommand reads and checks itself ([tool.cudalint.smoke]:
# cudalint.runtime.smoke.settings); here they need only be tables.
_SUBTABLES = frozenset({"smoke"})


def _from_table(table: Mapping[str, Any], path: Path) -> Config:
    unknown = sorted(set(table) - _KEYS - _SUBTABLES)
    if unknown:
        raise ConfigError(f"{path}: unknown key in [tool.cudalint]: {unknown[0]!r}")
    config = Config(root=path.parent.resolve(), source=path)
    for name in _SUBTABLES & set(table):
        if not isinstance(table[name], Mapping):
            raise ConfigError(f"{path}: [tool.cudalint] {name} must be a table")
    for key, value in table.items():
        if key in _SUBTABLES:
            continue
        attribute = key.replace("-", "_")
        expected = type(getattr(config, attribute))
        if not isinstance(value, expected) or isinstance(value, bool) is not (expected is bool):
            raise ConfigError(f"{path}: [tool.cudalint] {key} must be {_TYPE_NAMES[expected]}")
        if key == "exclude":
            value = [*value]
        setattr(config, attribute, value)
    _validate(config, path)
    return config


def _validate(config: Config, path: Path) -> None:
    """Every value, so that a bad one stops every command before any file is read or written."""
    where = f"{path}: [tool.cudalint]"
    for name in ("select", "ignore", "extend-select", "exclude", "extend-exclude",
                 "exclude-kinds", "known-first-party"):
        _require_strings(getattr(config, name.replace("-", "_")), f"{where} {name}")
    for pattern, codes in config.per_file_ignores.items():
        if not isinstance(codes, list):
            raise ConfigError(f"{where} per-file-ignores {pattern!r} must be a list of strings")
        _require_strings(codes, f"{where} per-file-ignores {pattern!r}")
    try:
        if config.target_torch:
            parse_version(config.target_torch)
    except ConfigError as error:
        raise ConfigError(f"{where} {error}") from None
    if config.helper and not re.fullmatch(_MODULE, config.helper):
        raise ConfigError(f"{where} helper: {config.helper!r} is not a module name such as "
                          "'pkg.device'")
    if config.helper.count(".") >= _MODULE_PARTS:  # LibCST nests one level per part
        raise ConfigError(f"{where} helper: a module name of {config.helper.count('.') + 1} "
                          f"parts; at most {_MODULE_PARTS}")
    for name in ("max-file-size", "max-memory"):
        size = getattr(config, name.replace("-", "_"))
        if size <= 0:
            raise ConfigError(f"{where} {name} must be a positive number of bytes")
        if size > _MAX_BYTES:
            raise ConfigError(f"{where} {name} must be at most {_MAX_BYTES} bytes (1 PiB)")
    if config.max_memory < _MIN_MEMORY:
        raise ConfigError(f"{where} max-memory must be at least {_MIN_MEMORY} bytes (64 MiB)")
    if config.exclude_kinds:
        from cudalint.kinds import FileKind

        kinds = {kind.value for kind in FileKind}
        unknown = next((k for k in config.exclude_kinds if k.lower() not in kinds), None)
        if unknown is not None:
            raise ConfigError(f"{where} exclude-kinds: {unknown!r} is not a kind of file ("
                              + ", ".join(sorted(kinds)) + ")")
    if config.fail_on not in FAIL_ON:
        raise ConfigError(f"{where} fail-on: {config.fail_on!r} is not one of "
                          + ", ".join(map(repr, FAIL_ON)))
    _require_known_selectors(config, where)


_MODULE = r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*"  # compiled when a helper is configured
_MODULE_PARTS = 50


def _require_known_selectors(config: Config, where: str) -> None:
    from cudalint.codes import is_known_selector  # the rule index: only for rule selectors

    named = [("select", config.select), ("ignore", config.ignore),
             ("extend-select", config.extend_select),
             *((f"per-file-ignores {pattern!r}", codes)
               for pattern, codes in config.per_file_ignores.items())]
    for name, selectors in named:
        if any(not code.strip() for code in selectors):  # it would match every rule
            raise ConfigError(f"{where} {name}: an empty rule selector (\"\")")
    codes = [code for _, selectors in named for code in selectors]
    unknown = next((code for code in codes if not is_known_selector(code)), None)
    if unknown is not None:
        raise ConfigError(f"{where} unknown rule selector {unknown!r} (see `cudalint rule --all`)")


def _require_strings(values: Sequence[object], where: str) -> None:
    if not all(isinstance(v, str) for v in values):
        raise ConfigError(f"{where} must be a list of strings")

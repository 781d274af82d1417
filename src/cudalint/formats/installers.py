"""Package installs in commands: `pip install`, `python -m pip install`, `uv pip install`,
`uv add`, `conda`/`mamba`/`micromamba install|create`. Each yields its arguments as
(option, word): the long option name with its value, or None with a package spec."""

from __future__ import annotations

import re
from collections.abc import Sequence

from cudalint.formats.requirements import OPTION_NAMES
from cudalint.formats.shell import Word, basename

Argument = tuple[str | None, Word]

_PIP = re.compile(r"pip(?:\d+(?:\.\d+)?)?")
_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?")
_CONDA = frozenset({"conda", "mamba", "micromamba"})
_PIP_VALUE_OPTIONS = frozenset({
    "-t", "--target", "--prefix", "--root", "--platform", "--python-version",
    "--implementation", "--abi", "--cache-dir", "--src", "--upgrade-strategy", "--progress-bar",
    "-C", "--config-settings", "--global-option", "--no-binary", "--only-binary", "--python",
    "-p", "--trusted-host", "--proxy", "--timeout", "--retries", "--log", "--report",
    "--exists-action", "--cert", "--client-cert", "--group", "--extra", "--index",
    "--default-index", "--torch-backend", "--index-strategy", "--keyring-provider",
})
_CONDA_VALUE_OPTIONS = frozenset({"-n", "--name", "-p", "--prefix", "--file", "--solver",
                                  "--repodata-fn", "--subdir", "--platform"})
_CONDA_CHANNEL = frozenset({"-c", "--channel"})


def pip_install(argv: Sequence[Word], verbs: tuple[str, ...] = ("install",),
                ) -> list[Argument] | None:
    """The arguments of a pip (or uv) install (or another of `verbs`: `download`, `wheel`
    fetch from the same indexes), or None when `argv` is something else."""
    rest = _pip_arguments(argv, verbs)
    if rest is None:
        return None
    return list(_options(rest, _PIP_VALUE_OPTIONS, OPTION_NAMES))


def _pip_arguments(argv: Sequence[Word], verbs: tuple[str, ...]) -> Sequence[Word] | None:
    values = [word.value for word in argv]
    if not values:
        return None
    head = basename(values[0])
    if _PIP.fullmatch(head):
        rest = argv[1:]
    elif _PYTHON.fullmatch(head) and values[1:3] == ["-m", "pip"]:
        rest = argv[3:]
    elif head == "uv" and values[1:2] == ["pip"]:
        rest = argv[2:]
    elif head == "uv" and values[1:2] == ["add"]:
        return argv[2:]
    else:
        return None
    while rest and rest[0].value.startswith("-"):
        rest = rest[1:]  # global options: `pip --no-cache-dir install`
    return rest[1:] if rest and rest[0].value in verbs else None


def conda_install(argv: Sequence[Word]) -> list[Argument] | None:
    """The arguments of `conda install|create`, `-c CHANNEL` as ("--channel", word)."""
    if len(argv) < 2 or basename(argv[0]) not in _CONDA or argv[1].value not in (
        "install", "create"
    ):
        return None
    names = {"-c": "--channel", "--channel": "--channel"}
    return list(_options(argv[2:], _CONDA_VALUE_OPTIONS | _CONDA_CHANNEL, names))


def _options(args: Sequence[Word], value_options: frozenset[str], names: dict[str, str],
             ) -> list[Argument]:
    found: list[Argument] = []
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if not word.value.startswith("-"):
            found.append((None, word))
            continue
        name, equals, value = word.value.partition("=")
        known = name in names or name in value_options
        if equals:
            start = word.end - len(value)
            found.append((names.get(name, name), Word(value, start, word.end)))
        elif known and index < len(args):
            found.append((names.get(name, name), args[index]))
            index += 1
    return found

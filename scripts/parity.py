"""One answer whatever the way in (issue 40): every file of a project gets the same findings
from `cudalint check .`, from a check of its folder, from a check of the file alone (run from
the project's root, and from the file's own folder), from a pre-commit run of it alone
(`--force-exclude`), from standard input with `--stdin-filename`, and from the language
server's first diagnostics; and `--fix` of the file alone writes what `--fix .` writes for it.

    python scripts/parity.py [TREE ...] [--kernel-library] [--no-lsp] [--no-fix]

Each TREE (a project: the folder of its pyproject.toml, setup.py or .git) is copied to a
temporary folder, and every way in is run there: the checks in this process (`cudalint.cli.main`,
`--output-format json`), the language server once per tree for all its files. A finding is
compared by its code, row, column, severity, guard flag and fix (applicability and message).
Each disagreement is printed with its file and the two ways in; exit 1 if there is any, 0 if
none, 2 on bad usage. `--kernel-library` adds a generated project whose own package is on
CUD201's table (`flash_attn`) and whose setup.py builds its own extension (`flash_attn._C`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.lsp.client import Client  # noqa: E402  (one LSP framing, the tests')

Key = tuple[Any, ...]  # code, row, column, severity, guarded, fix
Findings = dict[str, set[Key]]  # a file's path from the tree's root -> its findings
_SEVERITIES = {1: "error", 2: "warning", 3: "info"}
_REFERENCE = "check ."


class Disagreement:
    __slots__ = ("file", "first", "only_first", "only_second", "second")

    def __init__(self, file: str, first: str, second: str, only_first: object,
                 only_second: object) -> None:
        self.file, self.first, self.second = file, first, second
        self.only_first, self.only_second = only_first, only_second

    def __str__(self) -> str:
        return (f"{self.file}: `{self.first}` and `{self.second}` disagree\n"
                f"    only from `{self.first}`: {self.only_first}\n"
                f"    only from `{self.second}`: {self.only_second}")


KERNEL_LIBRARY = {
    "pyproject.toml": '[project]\nname = "flash-attn"\nversion = "2.0"\n',
    "setup.py": (
        "from setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n\n"
        'setup(\n    name="flash-attn",\n    packages=["flash_attn"],\n'
        '    ext_modules=[CUDAExtension("flash_attn._C", ["csrc/flash.cu"])],\n'
        '    cmdclass={"build_ext": BuildExtension},\n)\n'),
    "flash_attn/__init__.py": "",
    "flash_attn/mod.py": (
        "import torch\nfrom flash_attn import _C\nfrom flash_attn.utils import pad\n\n\n"
        "def forward(q):\n    return _C.fwd(pad(q).cuda())\n"),
    "flash_attn/utils.py": "def pad(x):\n    return x\n",
    # a class of the project with its own `cuda` method: `x.cuda()` may be one of its objects
    "tools/sensor.py": "class Sensor:\n    def cuda(self):\n        return self\n",
    "tests/test_mod.py": (
        "import torch\nfrom flash_attn.mod import forward\n\n\n"
        "def test_forward():\n    assert forward(torch.zeros(2, device='cuda')).shape == (2,)\n"),
}


def kernel_library(folder: Path) -> Path:
    """A kernel library's own repository (`flash-attention/`) written in `folder`."""
    root = folder / "flash-attention"
    for name, text in KERNEL_LIBRARY.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def parity(tree: Path, *, lsp: bool = True, fix: bool = True) -> list[Disagreement]:
    """Every disagreement between the ways into the files of `tree` (copied first)."""
    with tempfile.TemporaryDirectory(prefix="cudalint-parity-") as scratch:
        root = Path(scratch) / tree.resolve().name
        shutil.copytree(tree, root, ignore=shutil.ignore_patterns(".cudalint_cache"))
        return _compare_checks(root, lsp) + (_compare_fixes(root, Path(scratch)) if fix else [])


def _compare_checks(root: Path, lsp: bool) -> list[Disagreement]:
    files = _checked_files(root)
    reference = _json_check(root, root, ["."])
    ways: dict[str, Callable[[str], set[Key] | None]] = {}  # None: that way skips the file
    by_folder: dict[str, Findings] = {}
    for folder in sorted({os.path.dirname(f) or "." for f in files}):
        by_folder[folder] = _json_check(root, root, [folder])
    ways["check <its folder>"] = lambda f: by_folder[os.path.dirname(f) or "."].get(f, set())
    ways["check <file> from the root"] = lambda f: _json_check(root, root, [f]).get(f, set())
    ways["check <file> from its folder"] = lambda f: _json_check(
        root, root / (os.path.dirname(f) or "."), [os.path.basename(f)]).get(f, set())
    ways["check --force-exclude <file> (pre-commit)"] = lambda f: _json_check(
        root, root, ["--force-exclude", f], cache=True).get(f, set())
    ways["stdin --stdin-filename <file>"] = lambda f: _stdin_check(root, f)
    if lsp:
        served = _lsp_diagnostics(root, [f for f in files if not f.endswith(".ipynb")])
        ways["the language server"] = lambda f: served.get(f, set()) if f in served else None
    found = []
    for file in files:
        expected = reference.get(file, set())
        for name, way in ways.items():
            got = way(file)
            if got is not None and got != expected:
                found.append(Disagreement(file, _REFERENCE, name, sorted(expected - got),
                                          sorted(got - expected)))
    return found


def _compare_fixes(root: Path, scratch: Path) -> list[Disagreement]:
    whole = scratch / "fix-whole" / root.name
    shutil.copytree(root, whole, ignore=shutil.ignore_patterns(".cudalint_cache"))
    original = {f: (root / f).read_bytes() for f in _checked_files(root)}
    _run(whole, ["check", "--no-cache", "--fix", "--exit-zero", "."])
    found = []
    for file, before in original.items():
        alone = scratch / "fix-alone" / root.name
        shutil.rmtree(alone.parent, ignore_errors=True)
        shutil.copytree(root, alone, ignore=shutil.ignore_patterns(".cudalint_cache"))
        _run(alone, ["check", "--no-cache", "--fix", "--exit-zero", file])
        expected, got = (whole / file).read_bytes(), (alone / file).read_bytes()
        if got != expected:
            found.append(Disagreement(
                file, "check --fix .", "check --fix <file>",
                _first_difference(expected, before), _first_difference(got, before)))
    return found


def _first_difference(text: bytes, before: bytes) -> str:
    """The first line of `text` that differs from `before`, for the report."""
    new, old = text.decode(errors="replace").splitlines(), before.decode(errors="replace")
    changed = [line for line in new if line not in old.splitlines()]
    return repr(changed[0]) if changed else "(unchanged)"


def _checked_files(root: Path) -> list[str]:
    out = _run(root, ["check", "--show-files", "."])[1]
    return sorted(os.path.relpath(line.split("\t")[0], root) if os.path.isabs(line)
                  else line.split("\t")[0] for line in out.splitlines() if "\t" in line)


def _json_check(root: Path, cwd: Path, args: Sequence[str], *,
                cache: bool = False) -> Findings:
    """The findings of `cudalint check ARGS` run in `cwd`, by file from the tree's `root`."""
    argv = ["check", "--output-format", "json", "--exit-zero", *(() if cache else ("--no-cache",)),
            *args]
    code, out, err = _run(cwd, argv)
    if code not in (0, 1):
        raise RuntimeError(f"cudalint {' '.join(argv)} (in {cwd}) exited {code}: {err.strip()}")
    return _by_file(json.loads(out), root)


def _stdin_check(root: Path, file: str) -> set[Key]:
    data = (root / file).read_bytes()
    argv = ["check", "--output-format", "json", "--exit-zero", "--no-cache", "--stdin-filename",
            file, "-"]
    code, out, err = _run(root, argv, stdin=data)
    if code not in (0, 1):
        raise RuntimeError(f"cudalint {' '.join(argv)} exited {code}: {err.strip()}")
    findings = json.loads(out)
    for finding in findings:
        finding["filename"] = str(root / file)
    return _by_file(findings, root).get(file, set())


def _by_file(findings: list[dict[str, Any]], root: Path) -> Findings:
    found: Findings = {}
    for finding in findings:
        file = os.path.relpath(finding["filename"], root)
        fix = finding["fix"]
        found.setdefault(file, set()).add((
            finding["code"], finding["location"]["row"], finding["location"]["column"],
            finding["severity"], finding["guarded"],
            None if fix is None else (fix["applicability"], fix["message"])))
    return found


def _run(cwd: Path, argv: Sequence[str], stdin: bytes | None = None) -> tuple[int, str, str]:
    """`cudalint ARGV` in this process, run in `cwd`: its exit code, stdout and stderr."""
    from cudalint.cli import main

    out, err = io.StringIO(), io.StringIO()
    with _inside(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            _stdin(stdin):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _stdin(data: bytes | None) -> Iterator[None]:
    if data is None:
        yield
        return
    before = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    try:
        yield
    finally:
        sys.stdin = before


# --- the language server ------------------------------------------------------------------
_LSP_TIMEOUT = 120.0


def _lsp_diagnostics(root: Path, files: Sequence[str]) -> dict[str, set[Key]]:
    """The first diagnostics the server publishes for each file opened (positions in code
    points: the client asks for UTF-32), through the tests' LSP client."""
    client = Client(root, subprocess.DEVNULL)  # type: ignore[arg-type]  # a file descriptor
    try:
        client.initialize(root, {"general": {"positionEncodings": ["utf-32"]}}, os.getpid())
        uris = {(root / f).as_uri(): f for f in files}
        for uri, file in uris.items():
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python" if file.endswith(".py") else "plaintext",
                "version": 1, "text": (root / file).read_text(encoding="utf-8",
                                                               errors="replace")}})
        published = {uri: client.diagnostics(uri, timeout=_LSP_TIMEOUT) for uri in uris}
        client.shutdown()
    finally:
        client.kill()
    return {uris[uri]: {_diagnostic_key(d) for d in diagnostics}
            for uri, diagnostics in published.items()}


def _diagnostic_key(diagnostic: dict[str, Any]) -> Key:
    data = diagnostic.get("data") or {}
    fix = data.get("fix")
    start = diagnostic["range"]["start"]
    fixed = None
    if fix is not None:
        message = fix["title"].split(": ", 1)[1].removesuffix(" (unsafe)")
        fixed = (fix["applicability"], message)
    return (diagnostic.get("code"), start["line"] + 1, start["character"] + 1,
            _SEVERITIES[diagnostic["severity"]], bool(data.get("guarded")), fixed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", type=Path, help="project folders")
    parser.add_argument("--kernel-library", action="store_true",
                        help="also a generated kernel library (flash_attn, flash_attn._C)")
    parser.add_argument("--no-lsp", action="store_true", help="leave the language server out")
    parser.add_argument("--no-fix", action="store_true", help="leave the --fix comparison out")
    args = parser.parse_args(argv)
    missing = [tree for tree in args.trees if not tree.is_dir()]
    if missing:
        print(f"parity: error: {missing[0]}: not a folder", file=sys.stderr)
        return 2
    if not args.trees and not args.kernel_library:
        parser.error("no tree to compare")
    with tempfile.TemporaryDirectory(prefix="cudalint-generated-") as generated:
        trees = [*args.trees, *([kernel_library(Path(generated))] if args.kernel_library else [])]
        return _compare_all(trees, lsp=not args.no_lsp, fix=not args.no_fix)


def _compare_all(trees: Sequence[Path], *, lsp: bool, fix: bool) -> int:
    failed = 0
    for tree in trees:
        started = time.monotonic()
        found = parity(tree, lsp=lsp, fix=fix)
        for disagreement in found:
            print(disagreement)
        failed += len(found)
        verdict = f"{len(found)} disagreement(s)" if found else "every way in agrees"
        print(f"parity: {tree}: {verdict} ({time.monotonic() - started:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

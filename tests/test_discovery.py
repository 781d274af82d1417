"""Which files a run reads: a file or folder named on the command line is checked even under an
excluded folder or with an excluded name (as ruff), unless --force-exclude; below a named
folder the excludes and .gitignore files apply to each entry found. Real trees, through the
command line in-process."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cudalint.cli import main

LIBRARY = ".venv/lib/python3.11/site-packages/pkg"
CUDA = "import torch\n\nmodel = Net().cuda()\n"
# What must not be flagged, whatever the folder: prose, a docstring, a dict key, x.device.
PROSE = (
    '"""Call .cuda() on the model first."""\n'
    'print("moving to .cuda()")\n'
    'speeds = {"cuda": 1.0}\n'
    "where = tensor.device\n"
)


def _write(root: Path, name: str, text: str = CUDA) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@contextmanager
def _cwd(folder: Path) -> Iterator[None]:
    previous = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def _checked(capsys, root: Path, *args: str, cwd: Path | None = None) -> tuple[int, set[str]]:
    """The exit code and the files with findings, relative to `root`."""
    with _cwd(cwd or root):
        code = main(["check", "--no-cache", "--output-format", "json", *args])
    found = json.loads(capsys.readouterr().out)
    return code, {Path(f["filename"]).resolve().relative_to(root).as_posix() for f in found}


@pytest.fixture(params=["git", "pyproject"])
def project(request, tmp_path: Path) -> Path:
    """A project (a git root, or a pyproject.toml with a [tool.cudalint] table) with a
    virtual environment inside it."""
    root = tmp_path / "proj"
    if request.param == "git":
        (root / ".git").mkdir(parents=True)
    else:
        _write(root, "pyproject.toml", '[tool.cudalint]\nignore = ["CUD6"]\n')
    _write(root, "src/train.py")
    _write(root, "src/notes.py", PROSE)
    _write(root, f"{LIBRARY}/mod.py")
    _write(root, f"{LIBRARY}/doc.py", PROSE)
    return root.resolve()


# -- a folder named under an excluded one ----------------------------------------------------
def test_a_named_folder_under_an_excluded_one_is_checked(capsys, project):
    assert _checked(capsys, project, ".") == (1, {"src/train.py"})
    code, files = _checked(capsys, project, "src", LIBRARY)
    assert (code, files) == (1, {"src/train.py", f"{LIBRARY}/mod.py"})
    assert _checked(capsys, project, LIBRARY) == (1, {f"{LIBRARY}/mod.py"})


def test_a_named_file_under_an_excluded_folder_is_checked(capsys, project):
    named = f"{LIBRARY}/mod.py"
    assert _checked(capsys, project, named, "src/notes.py") == (1, {named})
    assert _checked(capsys, project, f"{LIBRARY}/doc.py") == (0, set())


@pytest.mark.parametrize("form", ["relative", "dotdot", "absolute", "detour"])
def test_named_paths_as_relative_absolute_and_with_dotdot(capsys, project, form):
    src = project / "src"
    given = {
        "relative": (project, LIBRARY),
        "dotdot": (src, f"../{LIBRARY}"),
        "absolute": (src, str(project / LIBRARY)),
        "detour": (project, f"src/../{LIBRARY}"),
    }
    cwd, path = given[form]
    assert _checked(capsys, project, path, cwd=cwd) == (1, {f"{LIBRARY}/mod.py"})
    assert _checked(capsys, project, f"{path}/mod.py", cwd=cwd) == (1, {f"{LIBRARY}/mod.py"})
    assert _checked(capsys, project, "--force-exclude", path, cwd=cwd) == (0, set())


def test_a_named_folder_whose_own_name_is_excluded(capsys, project):
    _write(project, "build/lib/pkg/train.py")
    _write(project, "dist/gen.py")
    assert _checked(capsys, project, ".") == (1, {"src/train.py"})
    assert _checked(capsys, project, "build") == (1, {"build/lib/pkg/train.py"})
    assert _checked(capsys, project, "build/lib", "dist") == (
        1, {"build/lib/pkg/train.py", "dist/gen.py"})


def test_excluded_folders_below_a_named_one_are_skipped(capsys, project):
    for inner in ("build/gen.py", ".venv/lib/site.py", "node_modules/x/hook.py", "dist/y.py"):
        _write(project, f"{LIBRARY}/{inner}")
    _write(project, f"{LIBRARY}/builder/kept.py")  # only the folder named build
    code, files = _checked(capsys, project, LIBRARY)
    assert (code, files) == (1, {f"{LIBRARY}/mod.py", f"{LIBRARY}/builder/kept.py"})


# -- --force-exclude ---------------------------------------------------------------------------
def test_force_exclude_skips_named_folders_and_files_under_excludes(capsys, project):
    _write(project, "build/lib/train.py")
    for args in ([LIBRARY], [f"{LIBRARY}/mod.py"], ["build"], ["build/lib/train.py"],
                 [str(project / LIBRARY)]):
        assert _checked(capsys, project, "--force-exclude", *args) == (0, set()), args
    code, files = _checked(capsys, project, "--force-exclude", "src", LIBRARY, "build")
    assert (code, files) == (1, {"src/train.py"})


def test_force_exclude_matches_from_the_project_root_only(capsys, tmp_path):
    """The folders above the project (here one named `build`) are not the project's."""
    root = tmp_path / "build" / "proj"
    (root / ".git").mkdir(parents=True)
    _write(root, "src/train.py")
    for args in (["src", "src/train.py"], ["."], [str(root)]):
        code, files = _checked(capsys, root.resolve(), "--force-exclude", *args)
        assert (code, files) == (1, {"src/train.py"}), args


def test_show_files_lists_a_named_folder_under_an_excluded_one(capsys, project):
    with _cwd(project):
        assert main(["check", "--show-files", LIBRARY]) == 0
        listed = capsys.readouterr().out.splitlines()
        assert main(["check", "--show-files", "--force-exclude", LIBRARY]) == 0
        assert capsys.readouterr().out == ""
    assert listed == [f"{LIBRARY}/doc.py\tpython", f"{LIBRARY}/mod.py\tpython"]


# -- patterns with a slash keep their meaning from the project root ---------------------------
def test_patterns_with_a_slash_match_the_path_from_the_project_root(capsys, tmp_path):
    root = tmp_path.resolve()
    _write(root, "pyproject.toml",
           '[tool.cudalint]\nextend-exclude = ["vendor/gen/*.py", "third_party/old"]\n')
    _write(root, "vendor/gen/a.py")
    _write(root, "vendor/lib.py")
    _write(root, "gen/b.py")  # `vendor/gen/*.py` is anchored at the root
    _write(root, "third_party/old/sub/c.py")
    _write(root, "third_party/new/d.py")
    assert _checked(capsys, root, ".") == (1, {"vendor/lib.py", "gen/b.py", "third_party/new/d.py"})
    assert _checked(capsys, root, "vendor/gen") == (0, set())  # each file matches itself
    assert _checked(capsys, root, "vendor/gen/a.py") == (1, {"vendor/gen/a.py"})  # named
    # below an excluded folder, named: its entries match the pattern only through the folder
    assert _checked(capsys, root, "third_party/old/sub") == (1, {"third_party/old/sub/c.py"})
    assert _checked(capsys, root, "--force-exclude", "third_party/old/sub") == (0, set())


def test_per_file_ignores_keep_their_meaning_from_the_project_root(capsys, tmp_path):
    root = tmp_path.resolve()
    _write(root, "pyproject.toml",
           '[tool.cudalint.per-file-ignores]\n"vendor/*" = ["CUD1"]\n"build/*" = ["CUD1"]\n')
    _write(root, "vendor/lib.py")
    _write(root, "build/lib.py")
    _write(root, "src/train.py")
    for cwd in (root, root / "vendor"):
        assert _checked(capsys, root, str(root / "vendor"), str(root / "build"), cwd=cwd) == (
            0, set())
    assert _checked(capsys, root, str(root / "src"), cwd=root / "vendor") == (
        1, {"src/train.py"})


# -- .gitignore --------------------------------------------------------------------------------
def test_gitignore_above_a_named_folder_applies_below_it(capsys, project):
    _write(project, ".gitignore", "scratch_*.py\n/generated/\n")
    _write(project, "src/scratch_1.py")
    _write(project, "src/deep/.gitignore", "local.py\n")
    _write(project, "src/deep/local.py")
    _write(project, "src/deep/kept.py")
    _write(project, "generated/out.py")
    expected = {"src/train.py", "src/deep/kept.py"}
    assert _checked(capsys, project, ".") == (1, expected)
    assert _checked(capsys, project, "src") == (1, expected)
    assert _checked(capsys, project, "src/deep") == (1, {"src/deep/kept.py"})
    # what a .gitignore matches is checked when named, as ripgrep and ruff do
    assert _checked(capsys, project, "generated") == (1, {"generated/out.py"})
    assert _checked(capsys, project, "src/scratch_1.py") == (1, {"src/scratch_1.py"})


def test_gitignore_is_not_read_when_respect_gitignore_is_off(capsys, tmp_path):
    root = tmp_path.resolve()
    _write(root, "pyproject.toml", "[tool.cudalint]\nrespect-gitignore = false\n")
    _write(root, ".gitignore", "scratch_*.py\n")
    _write(root, "src/scratch_1.py")
    assert _checked(capsys, root, "src") == (1, {"src/scratch_1.py"})


# -- the matching itself -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("lines", "path", "covers", "matches"),
    [
        (["vendor/"], "x/vendor/", True, True),
        (["vendor/"], "x/vendor", False, False),  # a file: the pattern is for folders
        (["vendor/"], "x/vendor/a.py", True, False),
        (["src/gen"], "src/gen/a.py", True, False),
        (["src/gen"], "lib/src/gen", False, False),  # anchored at the root
        (["build/**"], "build/sub/a.py", True, True),  # `**` names what lies inside
        (["a/**/b"], "a/x/b/c.py", True, False),
        (["a/**/b"], "a/x/b/", True, True),
        (["*.py", "!keep.py"], "a/keep.py", False, False),
        (["*.py", "!keep.py"], "a/other.py", True, True),
    ],
)
def test_an_entry_matches_itself_or_through_a_folder(lines, path, covers, matches):
    from cudalint.engine.running.discovery import _PathspecPatterns, _spec

    for spec in (_spec(lines), _PathspecPatterns(lines)):  # translated where it can be
        assert (spec.covers(path), spec.matches(path)) == (covers, matches)


# What GitHub's Python .gitignore and this project's hold, and the shapes between them.
_GLOBS = ["*.py[cod]", "*$py.class", "*.egg-info/", ".venv/", "/.whl/", "docs/_build/",
          "build/*", "x/*/y", "*/gen", "/*.log", "foo*bar", "?x", "[a-c]*", "[Bb]uild/",
          "lib64/", "/site", "a/b", "a/b/", "cython_debug/", ".spyderproject", "*.sage.py",
          "trailing  ", "src/*.py", "a.b+c-d"]
_PARTS = ["a", "b", "Build", "x", "y", "gen", "src", "docs", "_build", "build", "site", "lib64",
          "m.pyc", "m.pyo", "m.py", "m$py.class", "pkg.egg-info", ".venv", ".whl", "foobar",
          "foo-bar", "ax", "xx", "bb", "cb", "ab", "trailing", "s.sage.py", "a.b+c-d", "r.log"]


def test_glob_patterns_match_as_pathspec_does_without_importing_it():
    """Patterns with neither a negation nor `**` (nearly every .gitignore) are translated as
    pathspec translates them; a walk asks them what it asks pathspec, with the same answers."""
    import itertools

    from cudalint.engine.running.discovery import _Names, _PathspecPatterns, _Patterns, _spec

    # every path of one and two parts; of three parts (27,000), a fixed sample: each glob is
    # anchored or matches a name, which three parts test no better than two (it was 45 s here)
    combos = [*itertools.product(_PARTS, repeat=1), *itertools.product(_PARTS, repeat=2),
              *random.Random(3).sample(list(itertools.product(_PARTS, repeat=3)), 1500)]
    for lines in [[glob] for glob in _GLOBS] + [_GLOBS, ["dist", "*.py[cod]", "a/b/"]]:
        own, reference = _spec(lines), _PathspecPatterns(lines)
        assert isinstance(own, (_Names, _Patterns)), lines
        for combo in combos:
            joined = "/".join(combo)
            for path in (joined, joined + "/", "/w/" + joined, "/w/" + joined + "/"):
                assert own.covers(path) == reference.covers(path), (lines, path)
                assert own.matches(path) == reference.matches(path), (lines, path)


@pytest.mark.parametrize("line", ["!keep.py", "build/**", "**/gen", "a\\ b", "\\#x", "/", "*",
                                  " lead", "a//b", "[/]x", "a[b", "[!a]b", "[^a]b",
                                  "[+-0]x"])
def test_other_patterns_are_left_to_pathspec(line):
    from cudalint.engine.running.discovery import _PathspecPatterns, _spec

    assert isinstance(_spec(["*.pyc", line]), _PathspecPatterns)

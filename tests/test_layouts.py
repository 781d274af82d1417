"""A fixed project still starts, from every entry point, on CUDA as before and off CUDA.

Each project of fixtures/layouts/ is copied into a folder whose path has a space and an accent,
fixed whole (`check --fix --unsafe-fixes .`) and, in a second copy, one file at a time (what the
pre-commit hook does): both give the same tree. Its entry points then run as users run them
(scripts from their folder or by path, packages from their import root, `python -m`) in a
Python where cudalint cannot be imported, with CUDA availability patched present and absent
(`sitecustomize` below records the device of every move). With CUDA present the fixed program
makes the same moves as the original; without it, the fixed program runs on the CPU.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.runtime.helper import INLINE_BEGIN
from tests.warm_python import WarmPython

LAYOUTS = Path(__file__).resolve().parents[1] / "fixtures" / "layouts"

# name -> entry points: (folder to run in, relative to the project; argv; extra import roots)
ENTRY_POINTS: dict[str, list[tuple[str, list[str], list[str]]]] = {
    "namespace": [(".", ["run_sample.py"], []),
                  (".", ["-c", "import lab.models.sampling.sampler as m; print(m.sample(2).shape)"],
                   [])],
    "src_layout": [(".", ["-m", "proj.train"], ["src"])],
    "flat_scripts": [(".", ["train.py"], [])],
    "tools_configs": [(".", ["tools/train_net.py", "configs/base.py"], []),
                      ("tools", ["train_net.py", "../configs/base.py"], [])],
    "package_scripts": [(".", ["main.py"], []), (".", ["-m", "pkg.model"], [])],
    "standalone": [(".", ["scripts/sub/bench.py"], []), ("scripts/sub", ["bench.py"], [])],
    "path_setup": [(".", ["classify/train.py"], []), ("classify", ["train.py"], [])],
    "sub_project": [(".", ["run.py"], []),  # the sub-project alone: from its folder, installed
                    ("plugins/ext", ["tests/test_ops.py"], ["plugins/ext"])],
    "root_init": [(".", ["train.py"], [])],
    "dash_name": [(".", ["my-repo/train.py"], [])],
    "configured": [(".", ["main.py"], [])],
    "shadowed": [(".", ["main.py"], [])],
}
# Fixed with the safe fixes only (`Sensor().cuda()` is a class of the project's own).
SAFE_ONLY = frozenset({"shadowed"})
INLINE = "inline"
# name -> the helper each fixed file imports (INLINE: carries it); files not named import none.
HELPERS: dict[str, dict[str, str]] = {
    "namespace": {"lab/models/sampling/sampler.py": "_device"},
    "src_layout": {"src/proj/model.py": "proj._device", "src/proj/train.py": "proj._device"},
    "flat_scripts": {"field/helpers.py": "_device", "utils.py": "_device"},
    "tools_configs": {"configs/base.py": INLINE, "tools/train_net.py": INLINE},
    "package_scripts": {"main.py": "pkg._device", "pkg/model.py": "pkg._device"},
    "standalone": {"scripts/sub/bench.py": INLINE},
    # several root packages: beside them, at the root that the scripts put on sys.path
    "path_setup": {"classify/train.py": "_device", "classify/val.py": "_device"},
    "sub_project": {"run.py": "mainpkg._device", "mainpkg/core.py": "mainpkg._device",
                    "plugins/ext/extpkg/ops.py": "extpkg._device",
                    "plugins/ext/tests/test_ops.py": INLINE},
    "root_init": {"train.py": "_device", "model.py": "_device"},
    "dash_name": {"my-repo/train.py": INLINE},
    "configured": {"main.py": "pkg.device", "pkg/model.py": "pkg.device"},
    "shadowed": {"pkg/model.py": "pkg._cudalint_device"},  # pkg/_device/ is the project's
}

SITECUSTOMIZE = textwrap.dedent('''
    import atexit
    import os
    import sys


    class _NoCudalint:
        def find_spec(self, name, path=None, target=None):
            if name == "cudalint" or name.startswith("cudalint."):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked)")
            return None


    sys.meta_path.insert(0, _NoCudalint())
    MODE = os.environ.get("FAKE_CUDA")
    if MODE:
        import torch

        present = MODE == "present"
        moves = []
        torch.cuda.is_available = lambda: present
        torch.cuda.device_count = lambda: 1 if present else 0
        real_sync = torch.cuda.synchronize

        def synchronize(device=None):
            moves.append("synchronize")
            if not present:
                real_sync(device)

        torch.cuda.synchronize = synchronize

        def _device(args, kwargs):
            found = torch._C._nn._parse_to(*args, **kwargs)[0]
            return None if found is None else str(found)

        def _wrap(cls):
            real_to, real_cuda = cls.to, cls.cuda

            def to(self, *args, **kwargs):
                device = _device(args, kwargs)
                moves.append(device)
                if present and device is not None and device.startswith("cuda"):
                    return self
                return real_to(self, *args, **kwargs)

            def cuda(self, device=None, *args, **kwargs):
                moves.append("cuda" if device is None else f"cuda:{device}")
                return self if present else real_cuda(self, device, *args, **kwargs)

            cls.to, cls.cuda = to, cuda

        _wrap(torch.Tensor)
        _wrap(torch.nn.Module)
        atexit.register(lambda: print("MOVES", moves))
''')


@pytest.fixture(scope="module")
def fake_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return folder


def _copy(name: str, base: Path) -> Path:
    target = base / "Mes projets é" / name
    shutil.copytree(LAYOUTS / name, target)
    return target


def _fix(*paths: Path, cwd: Path, capsys: pytest.CaptureFixture[str],
         unsafe: bool = True) -> None:
    here = Path.cwd()
    os.chdir(cwd)
    try:
        code = main(["check", "--no-cache", "--fix", *(["--unsafe-fixes"] if unsafe else []),
                     *(str(p.relative_to(cwd)) for p in paths)])
    finally:
        os.chdir(here)
    out = capsys.readouterr()
    assert code in (0, 1), out.err


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def _run(project: Path, entry: tuple[str, list[str], list[str]], site: Path,
         mode: str, warm: WarmPython) -> subprocess.CompletedProcess[str]:
    """`python ARGV` in the entry point's folder, forked from a process that imported torch
    (tests/warm_python.py: 30 runs here, each importing torch, were most of this file's CPU)."""
    folder, argv, roots = entry
    path = os.pathsep.join([str(site), *(str(project / r) for r in roots)])
    env = {**os.environ, "PYTHONPATH": path, "FAKE_CUDA": mode, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("CUDALINT_DEVICE", None)
    return warm.run(argv, cwd=project / folder, env=env)


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_every_entry_point_runs_after_the_fix_as_before(
        name: str, tmp_path: Path, fake_site: Path, capsys: pytest.CaptureFixture[str],
        warm_python: WarmPython) -> None:
    whole = _copy(name, tmp_path / "whole")
    before = {i: _run(whole, entry, fake_site, "present", warm_python)
              for i, entry in enumerate(ENTRY_POINTS[name])}
    for outcome in before.values():
        assert outcome.returncode == 0, outcome.stderr
        assert "MOVES" in outcome.stdout
    unsafe = name not in SAFE_ONLY
    _fix(whole, cwd=whole, capsys=capsys, unsafe=unsafe)
    assert _tree(whole) != _tree(LAYOUTS / name), "nothing was fixed"
    assert _helpers(whole) == HELPERS[name]

    one_by_one = _copy(name, tmp_path / "files")
    for path in sorted(one_by_one.rglob("*.py")):
        _fix(path, cwd=one_by_one, capsys=capsys, unsafe=unsafe)
    assert _tree(one_by_one) == _tree(whole)

    for i, entry in enumerate(ENTRY_POINTS[name]):
        on_cuda = _run(whole, entry, fake_site, "present", warm_python)
        assert on_cuda.returncode == 0, on_cuda.stderr
        assert on_cuda.stdout == before[i].stdout  # the same output, the same moves
        off_cuda = _run(whole, entry, fake_site, "absent", warm_python)
        assert off_cuda.returncode == 0, off_cuda.stderr
        moves = off_cuda.stdout.splitlines()[-1]
        assert "cuda" not in moves.replace("synchronize", ""), moves
        assert off_cuda.stdout.splitlines()[:-1] == on_cuda.stdout.splitlines()[:-1]


_HELPER_IMPORT = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+[^\n]*\b"
                            r"(?:pick_device|synchronize)\b", re.MULTILINE)


def _helpers(root: Path) -> dict[str, str]:
    """The helper each Python file of `root` imports (INLINE: carries it inline); a module
    that puts folders on sys.path imports it below that line."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        imported = _HELPER_IMPORT.search(text)
        if imported is not None:
            found[str(path.relative_to(root))] = imported.group(1)
            setup = text.find("sys.path.append(")
            assert setup < imported.start(), path  # -1: none
        elif INLINE_BEGIN in text:
            found[str(path.relative_to(root))] = INLINE
    return found


def test_the_helper_import_above_the_sys_path_line_breaks_the_script(
        tmp_path: Path, fake_site: Path, capsys: pytest.CaptureFixture[str],
        warm_python: WarmPython) -> None:
    """What the placement below the set-up prevents (the check above can fail): the import
    moved back into the leading import block cannot find the helper at the root."""
    project = _copy("path_setup", tmp_path)
    _fix(project / "classify" / "train.py", cwd=project, capsys=capsys)
    script = project / "classify" / "train.py"
    lines = script.read_text().splitlines(keepends=True)
    [line] = [line for line in lines if line.startswith("from _device import")]
    lines.remove(line)
    lines.insert(lines.index("import torch\n"), line)
    script.write_text("".join(lines))
    outcome = _run(project, ENTRY_POINTS["path_setup"][0], fake_site, "absent",
                   warm_python)
    assert outcome.returncode != 0
    assert "ModuleNotFoundError: No module named '_device'" in outcome.stderr


def test_the_original_entry_points_fail_off_cuda(tmp_path: Path, fake_site: Path,
                                                 warm_python: WarmPython) -> None:
    """The check above can fail: the unfixed code does not run without CUDA."""
    project = _copy("package_scripts", tmp_path)
    outcome = _run(project, ENTRY_POINTS["package_scripts"][0], fake_site, "absent", warm_python)
    assert outcome.returncode != 0


def test_a_second_fix_changes_nothing_and_the_helper_has_only_what_is_used(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _copy("package_scripts", tmp_path)
    _fix(project, cwd=project, capsys=capsys)
    helper = project / "pkg" / "_device.py"
    first = _tree(project)
    assert "from pkg._device import pick_device" in (project / "pkg" / "model.py").read_text()
    assert "from pkg._device import synchronize" in (project / "main.py").read_text()
    text = helper.read_text()
    assert "def pick_device(" in text and "def synchronize(" in text
    assert "def manual_seed(" not in text and "def Event(" not in text
    _fix(project, cwd=project, capsys=capsys)
    assert _tree(project) == first


def test_the_notebook_runs_alone_in_a_real_kernel_after_the_fix(
        tmp_path: Path, fake_site: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Alone in an empty folder, the cell importing the repository's package fails; the
    helper on top of that cell is defined all the same, so the next cell still runs."""
    import nbclient  # of the dev extra
    import nbformat
    project = _copy("notebook", tmp_path)
    _fix(project, cwd=project, capsys=capsys)
    assert not (project / "_device.py").exists()  # inline: a kernel may run anywhere
    cells = [cell for cell in json.loads((project / "train.ipynb").read_text())["cells"]
             if cell["cell_type"] == "code"]
    # a cell of its own just before the first that needs it (above its imports: E402)
    assert "".join(cells[1]["source"]).startswith(INLINE_BEGIN)
    assert "".join(cells[2]["source"]).startswith("%env TOKENIZERS_PARALLELISM=false\n")
    alone = tmp_path / "fresh folder"
    alone.mkdir()
    shutil.copy(project / "train.ipynb", alone)
    monkeypatch.setenv("PYTHONPATH", str(fake_site))
    monkeypatch.delenv("FAKE_CUDA", raising=False)
    notebook = nbformat.read(alone / "train.ipynb", as_version=4)
    client = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=120,
                                     allow_errors=True,
                                     resources={"metadata": {"path": str(alone)}})
    client.execute()
    outputs = [output for cell in notebook.cells for output in cell.get("outputs", [])]
    errors = [output.get("ename") for output in outputs if output.get("output_type") == "error"]
    assert errors == ["ModuleNotFoundError"]  # nblab, not installed: never NameError
    printed = "".join(output.get("text", "") for output in outputs)
    assert "after (3,)" in printed

"""CUD305 with per-extension folders: each `ext_*/setup.py` builds its own CUDA extension,
imported from the module beside it."""

from __future__ import annotations

import json
from pathlib import Path

from cudalint.cli import main
from cudalint.config import Config
from cudalint.engine.project import facts
from cudalint.kinds import FileKind

EXT_SETUP = '''\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="{name}",
    ext_modules=[CUDAExtension(name="_{name}", sources=["{name}.cpp", "{name}_kernel.cu"])],
    cmdclass={{"build_ext": BuildExtension}},
)
'''


def _project(root: Path) -> None:
    for name in ("ext_a", "ext_b"):
        (root / name).mkdir()
        (root / name / "setup.py").write_text(EXT_SETUP.format(name=name))
        (root / name / f"{name}.py").write_text(
            f"import torch\nimport _{name} as _backend\n\n\n"
            f"def forward(x):\n    return _backend.forward(x)\n")
    (root / "model.py").write_text("import _ext_a\nimport _ext_c\nimport ext_a\n")
    (root / "pyproject.toml").write_text('[project]\nname = "tree"\n')


def _found(capsys, *args: str) -> set[tuple[str, int, int]]:
    main(["check", "--no-cache", "--select", "CUD305", "--output-format", "json", *args])
    return {(Path(f["filename"]).name, f["location"]["row"], f["location"]["column"])
            for f in json.loads(capsys.readouterr().out)}


def test_every_setup_py_of_the_tree_names_extensions(tmp_path, capsys):
    _project(tmp_path)
    assert _found(capsys, str(tmp_path)) == {
        ("ext_a.py", 2, 8), ("ext_b.py", 2, 8), ("model.py", 1, 8)}


def test_a_setup_py_without_extensions_is_not_parsed(tmp_path, monkeypatch):
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='x')\n")
    nested = tmp_path / "tools" / "setup.py"
    nested.parent.mkdir()
    nested.write_text(EXT_SETUP.format(name="tool"))
    found = [(tmp_path / "setup.py", FileKind.PYTHON), (nested, FileKind.PYTHON)]
    parsed: list[str] = []
    from cudalint.engine.project import setup_py

    real = setup_py.read_setup
    monkeypatch.setattr(setup_py, "read_setup", lambda text: parsed.append(text) or real(text))
    tree = facts.scan_tree(found, 1 << 20)
    assert tree.extension_modules == frozenset({"_tool"})
    assert len(parsed) == 1
    settings = facts.with_tree(facts.settings_for(Config(root=tmp_path)), tree)
    assert settings.extension_modules == frozenset({"_tool"})

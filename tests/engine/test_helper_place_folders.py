"""Where the helper goes is decided from each folder's real path, made one folder at a time
from its parent's (one system call a folder); it is the path `Path.resolve()` gives."""

from __future__ import annotations

import os
from pathlib import Path

from cudalint.engine.project import helper_place


def test_real_folders_are_what_resolve_gives_through_links_and_dot_dots(tmp_path, monkeypatch):
    (tmp_path / "real" / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "real" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "real" / "pkg" / "sub" / "__init__.py").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "real")  # a linked folder above
    (tmp_path / "real" / "pkg" / "back").symlink_to("..")  # a relative link
    (tmp_path / "loop").symlink_to(tmp_path / "loop")  # a link to itself
    monkeypatch.chdir(tmp_path / "real")
    folders = [tmp_path / "link" / "pkg" / "sub", tmp_path / "real" / "pkg" / "back" / "pkg",
               tmp_path / "link" / "pkg" / ".." / "pkg" / "sub", Path("pkg/sub"), Path("."),
               Path("pkg/missing/deeper"), tmp_path / "loop" / "x", Path(os.sep)]
    helper_place._real_folder.cache_clear()
    for folder in folders:
        assert _outcome(helper_place._real_folder, folder) == _outcome(Path.resolve, folder)
    place = helper_place.helper_place(tmp_path / "link" / "pkg" / "sub" / "train.py",
                                      helper_place.FileKind.PYTHON, tmp_path / "link")
    assert place.path == tmp_path / "real" / "pkg" / "_device.py"
    assert place.module == "pkg._device"


def _outcome(function, folder):
    try:
        return function(folder)
    except RuntimeError as error:  # a loop of links: resolve() raises it
        return type(error)


def _package(folder: Path, code: str = "") -> Path:
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "m.py").write_text(code)
    return folder / "m.py"


def test_a_project_inside_the_run_is_its_own_root(tmp_path):
    """`cudalint check --fix fixtures/` from an outer project: a sub-project with its own
    pyproject.toml places its package's helper in that package."""
    (tmp_path / "pyproject.toml").write_text("")
    inner = tmp_path / "examples" / "demo"
    module = _package(inner / "pkg")
    (inner / "pyproject.toml").write_text("")
    place = helper_place.helper_place(module, helper_place.FileKind.PYTHON, tmp_path)
    assert (place.module, place.path) == ("pkg._device", inner / "pkg" / "_device.py")


def test_a_package_below_plain_folders_follows_how_the_project_imports_it(tmp_path):
    # imported by its own name (a container folder put on the path): its own helper
    module = _package(tmp_path / "code" / "trainer")
    (tmp_path / "code" / "run.py").write_text("from trainer.m import f\n")
    place = helper_place.helper_place(module, helper_place.FileKind.PYTHON, tmp_path)
    assert place.module == "trainer._device"
    # imported through the plain folders (PEP 420 namespace): the root's helper
    other = tmp_path / "other"
    other.mkdir()
    module = _package(other / "lab" / "models" / "sampling")
    (other / "main.py").write_text("import lab.models.sampling.m\n")
    place = helper_place.helper_place(module, helper_place.FileKind.PYTHON, other)
    assert (place.module, place.path) == ("_device", other / "_device.py")


def _place(path: Path, root: Path) -> tuple[str, Path | None]:
    found = helper_place.helper_place(path, helper_place.FileKind.PYTHON, root)
    return found.module, found.path


def test_root_scripts_use_the_one_root_package_else_a_root_helper(tmp_path):
    one = tmp_path / "one"
    _package(one / "models")
    _package(one / "tests")  # not the project's code: it does not count
    (one / "train.py").write_text("import models.m\n")
    assert _place(one / "train.py", one) == ("models._device", one / "models" / "_device.py")
    several = tmp_path / "several"
    _package(several / "configs")
    _package(several / "models")
    (several / "train.py").write_text("import models.m\n")
    # not the alphabetically first package's (configs._device): a helper beside the scripts
    assert _place(several / "train.py", several) == ("_device", several / "_device.py")


def test_a_plain_folder_imported_by_its_dotted_name_imports_the_root_helper(tmp_path):
    (tmp_path / "field").mkdir()
    (tmp_path / "field" / "utils.py").write_text("")
    (tmp_path / "train.py").write_text("from field.utils import grid\n")
    assert _place(tmp_path / "field" / "utils.py", tmp_path) == ("_device",
                                                                 tmp_path / "_device.py")
    # a plain folder nothing imports by name (`python tools/x.py` puts tools/ on the path)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "x.py").write_text("import field.utils\n")
    assert _place(tmp_path / "tools" / "x.py", tmp_path) == (helper_place.INLINE.module, None)


def test_a_project_root_with_an_init_is_no_package_of_its_scripts(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "train.py").write_text("import model\n")
    assert _place(tmp_path / "train.py", tmp_path) == ("_device", tmp_path / "_device.py")
    module = _package(tmp_path / "pkg")  # a package below it is still one
    assert _place(module, tmp_path) == ("pkg._device", tmp_path / "pkg" / "_device.py")


def test_a_folder_no_import_can_name_is_never_an_import_path(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    script = _package(tmp_path / "my-repo")
    assert _place(script, tmp_path) == (helper_place.INLINE.module, None)
    inner = _package(tmp_path / "my-repo" / "core")
    assert _place(inner, tmp_path) == ("core._device", tmp_path / "my-repo" / "core" /
                                       "_device.py")


def test_a_sub_project_with_a_setup_py_is_a_root_of_its_own(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    _package(tmp_path / "mainpkg")
    sub = tmp_path / "plugins" / "ext"
    module = _package(sub / "extpkg")
    (sub / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    (sub / "tests").mkdir()
    (sub / "tests" / "test_ops.py").write_text("from extpkg.m import f\n")
    assert _place(module, tmp_path) == ("extpkg._device", sub / "extpkg" / "_device.py")
    # its tests run from the sub-project (or against it installed alone): inline
    assert _place(sub / "tests" / "test_ops.py", tmp_path) == (helper_place.INLINE.module, None)
    assert helper_place.sub_project_root(sub / "tests", tmp_path) == sub
    assert helper_place.sub_project_root(tmp_path / "mainpkg", tmp_path) == tmp_path


def test_a_device_package_or_module_of_the_projects_own_moves_the_helper(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    module = _package(tmp_path / "pkg")
    (tmp_path / "pkg" / "_device").mkdir()  # a package beside: `import pkg._device` finds it
    (tmp_path / "pkg" / "_device" / "__init__.py").write_text("KINDS = ()\n")
    assert _place(module, tmp_path) == ("pkg._cudalint_device",
                                        tmp_path / "pkg" / "_cudalint_device.py")
    # a `_device` in the folder of a script that imports the root's helper comes first on
    # its sys.path: the helper takes the other name
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text("")
    (other / "field").mkdir()
    (other / "field" / "utils.py").write_text("")
    (other / "field" / "_device.py").write_text("GPU = 0\n")
    (other / "train.py").write_text("from field.utils import grid\n")
    assert _place(other / "field" / "utils.py", other) == ("_cudalint_device",
                                                           other / "_cudalint_device.py")
    assert _place(other / "train.py", other) == ("_device", other / "_device.py")

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

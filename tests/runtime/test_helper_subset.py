"""The helper written into a project holds only what its fixed code uses; the inline form runs
inside any file, whatever that file binds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cudalint.cli import main
from cudalint.runtime import helper


def test_a_helper_module_holds_the_closure_of_its_names_in_a_stable_order():
    text = helper.helper_module_text(["pick_device"])
    assert text == helper.helper_module_text({"pick_device"})  # the same names, the same bytes
    assert text.startswith('"""Portable device selection and `torch.cuda.*` replacements')
    compile(text, "_device.py", "exec")
    assert helper.module_names(text) == {"pick_device"}
    assert "def _env_override(" in text and "def synchronize(" not in text
    both = helper.helper_module_text(["synchronize", "pick_device"])
    assert helper.module_names(both) == {"pick_device", "synchronize"}
    assert both.index("def pick_device(") < both.index("def synchronize(")
    assert "import subprocess" not in both  # only the imports its functions use


def test_the_whole_helper_is_recognised_as_holding_every_name():
    assert helper.module_names(helper.helper_source()) == helper.known_helpers()


def test_an_inline_block_runs_in_a_file_that_binds_the_helpers_own_names(tmp_path):
    block = helper.inline_block(["pick_device", "synchronize", "Event"])
    script = tmp_path / "bench.py"
    # `from time import time` and a module named os would be clobbered by a plain `import`
    script.write_text("from time import time\nos = 'not the module'\n\n" + block +
                      "\nstart = time()\nprint(pick_device().type, os)\nsynchronize()\n"
                      "e = Event(enable_timing=True)\ne.record()\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          check=False, env={"PATH": "/usr/bin:/bin", "CUDALINT_DEVICE": ""})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["cpu", "not", "the", "module"]


def test_an_inline_block_defines_only_what_an_earlier_block_lacks():
    first = helper.inline_block(["pick_device"])
    present = helper.inline_defined(first)
    assert "pick_device" in present and "_cudalint_env_override" in present
    more = helper.inline_block(["pick_device", "synchronize"], present)
    assert "def synchronize(" in more and "def pick_device(" not in more
    assert helper.inline_block(["pick_device"], present) == ""


def test_diff_shows_the_helper_as_a_new_file_and_writes_nothing(tmp_path, capsys, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "model.py").write_text("import torch\n\nx = torch.ones(1).cuda()\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--no-cache", "--diff", "."]) == 1
    out = capsys.readouterr().out
    assert "--- /dev/null\n+++ pkg/_device.py\n" in out
    assert "+from pkg._device import pick_device" in out
    assert not (tmp_path / "pkg" / "_device.py").exists()


def test_a_later_fix_extends_the_helper_an_earlier_one_wrote(tmp_path, capsys, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\n')
    (tmp_path / "train.py").write_text("import torch\n\nx = torch.ones(1).cuda()\n")
    monkeypatch.chdir(tmp_path)
    main(["check", "--no-cache", "--fix", "train.py"])
    written = Path("_device.py").read_text()
    assert helper.module_names(written) == {"pick_device"}
    Path("bench.py").write_text("import torch\n\ntorch.cuda.synchronize()\n")
    main(["check", "--no-cache", "--fix", "bench.py"])
    capsys.readouterr()
    assert helper.module_names(Path("_device.py").read_text()) == {"pick_device", "synchronize"}
    assert "from _device import synchronize" in Path("bench.py").read_text()


def test_a_run_inside_a_package_imports_the_packages_own_helper(tmp_path, capsys, monkeypatch):
    """The project's root can be the package itself (`cd mypkg; cudalint check .`, no
    pyproject.toml or .git): the package is imported from the folder above it."""
    package = tmp_path / "mypkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "layer.py").write_text("import torch\n\nx = torch.ones(1).cuda()\n")
    monkeypatch.chdir(package)
    assert main(["check", "--no-cache", "--diff", "."]) == 1
    out = capsys.readouterr().out
    assert "+from mypkg._device import pick_device" in out
    assert "+++ _device.py" in out


def test_a_root_with_a_tests_package_still_uses_the_projects_package(tmp_path, capsys,
                                                                       monkeypatch):
    for package in ("app", "tests"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\n')
    (tmp_path / "run.py").write_text("import torch\n\nx = torch.ones(1).cuda()\n")
    monkeypatch.chdir(tmp_path)
    main(["check", "--no-cache", "--fix", "run.py"])
    capsys.readouterr()
    assert "from app._device import pick_device" in Path("run.py").read_text()
    assert Path("app/_device.py").is_file() and not Path("tests/_device.py").exists()

"""What `--fix` writes: imports placed with the import block, unused ones removed (only
those), chains finished in one run, the project's own torch floor."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from cudalint.cli import main
from cudalint.config import Config
from cudalint.engine.fixes import imports
from cudalint.engine.project import facts as project
from tests.lint import run_on


def _fix(tmp_path: Path, source: str, codes: list[str] | None = None) -> str:
    return run_on(tmp_path, source, codes=codes, fix=True)[1].decode()


def test_import_goes_after_docstring_future_and_dunders(tmp_path):
    source = ('"""A training script."""\n\nfrom __future__ import annotations\n\n'
              '__author__ = "lab"\n__version__ = "1.0"\n\nmodel = Net().cuda()\n')
    assert _fix(tmp_path, source, ["CUD102"]) == (
        '"""A training script."""\n\nfrom __future__ import annotations\n\n'
        '__author__ = "lab"\n__version__ = "1.0"\nfrom cudalint.device import pick_device\n\n'
        "model = Net().to(pick_device())\n"
    )


def test_import_joins_the_import_block_not_the_code_below(tmp_path):
    source = ("import os\n\nimport numpy as np\n\nSEED = 1\n\n\n"
              "def run(x):\n    return x.cuda()\n")
    fixed = _fix(tmp_path, source, ["CUD102"])
    assert fixed.startswith("import os\n\nimport numpy as np\n"
                            "from cudalint.device import pick_device\n\nSEED = 1\n")


def test_an_import_whose_last_use_the_fix_removed_goes(tmp_path):
    source = ("import torch\nfrom torch.cuda.amp import GradScaler, autocast\n\n"
              "scaler = GradScaler()\n")
    fixed = _fix(tmp_path, source, ["CUD106"])
    # GradScaler's only use was rewritten; autocast was never used, and stays.
    assert "from torch.cuda.amp import autocast\n" in fixed
    assert "GradScaler, autocast" not in fixed
    assert "scaler = torch.amp.GradScaler(pick_device().type)" in fixed


def test_imports_used_elsewhere_or_unused_before_are_kept(tmp_path):
    source = ("import os\nimport torch\n\nx = torch.ones(2).cuda()\n")
    fixed = _fix(tmp_path, source, ["CUD102"])
    assert fixed.startswith("import os\nimport torch\n")


def test_the_last_use_of_torch_in_a_config_module_removes_the_import(tmp_path):
    source = "import torch\n\nDEVICE = torch.device('cuda')\nEPOCHS = 3\n"
    assert _fix(tmp_path, source, ["CUD101"]) == (
        "from cudalint.device import pick_device\n\nDEVICE = pick_device()\nEPOCHS = 3\n"
    )


def test_a_long_chain_is_fixed_in_one_run(chdir_tmp, capsys):
    chain = "x = t" + ".cuda().float()" * 14 + "\n"
    Path("chain.py").write_text(chain)
    assert main(["check", "--fix", "--select", "CUD102", "."]) == 0
    text = Path("chain.py").read_text()
    assert ".cuda(" not in text and text.count(".to(pick_device())") == 14


@pytest.mark.parametrize(
    ("files", "floor"),
    [
        ({"requirements.txt": "numpy\ntorch>=1.8,<2.2\n"}, (1, 8)),
        ({"requirements-dev.txt": "torch==2.3.1+cu121\n"}, (2, 3)),
        ({"pyproject.toml": '[project]\nname = "p"\ndependencies = ["torch~=2.1"]\n'}, (2, 1)),
        ({"pyproject.toml": '[project.optional-dependencies]\ngpu = ["torch>=1.13"]\n'},
         (1, 13)),
        ({"pyproject.toml": '[tool.poetry.dependencies]\ntorch = "^1.12"\n'}, (1, 12)),
        ({"setup.py": "from setuptools import setup\n"
                      "setup(name='p', install_requires=['torch>=1.9', 'numpy'])\n"}, (1, 9)),
        ({"setup.cfg": "[options]\ninstall_requires =\n    numpy\n    torch >= 1.10\n"}, (1, 10)),
        ({"environment.yml": "dependencies:\n  - python=3.9\n  - pytorch=1.7\n"}, (1, 7)),
        ({"environment.yml": "dependencies:\n  - pip:\n    - torch>=1.8\n"}, (1, 8)),
        ({"environment.yml": "dependencies:\n  - pytorch::pytorch=2.1=*cuda*\n"}, (2, 1)),
        # A conda environment by its content, whatever its name, as CUD401 reads it; by name
        # (`conda*.yml`) whatever its keys; not a YAML file that only has a `dependencies:`.
        ({"env.yml": "name: p\nchannels: [pytorch]\ndependencies:\n  - pytorch=1.9\n"}, (1, 9)),
        ({"conda-gpu.yaml": "dependencies:\n  - pytorch>=1.10\n"}, (1, 10)),
        ({"chart.yaml": "dependencies:\n  - pytorch=1.5\nversion: 1\n"}, (2, 6)),
        # The lowest of all the declarations wins.
        ({"requirements.txt": "torch>=2.2\n", "environment.yml": "dependencies: [pytorch=2.0]\n"},
         (2, 0)),
        ({"requirements.txt": "numpy\n"}, (2, 6)),  # says nothing: the documented default
        # A README lowers the assumed torch, never raises it, and names torch, not its kin.
        ({"README.md": "## Requirements\n- Python 3.8\n- PyTorch 1.7 (CUDA 11.0)\n"}, (1, 7)),
        ({"README.rst": "Install ``torch>=1.10.0`` and ``torchvision==0.11``.\n"}, (1, 10)),
        ({"README.md": "Tested with PyTorch version 1.4 and pytorch 2.1.\n"}, (1, 4)),
        ({"README.md": "Needs PyTorch (>= 1.6).\n"}, (1, 6)),
        ({"README.md": "torchvision 0.8, pytorch-lightning 1.5, torch.cuda 11.3\n"}, (2, 6)),
        ({"README.md": "Needs PyTorch 2.8 or later.\n"}, (2, 6)),
        ({"README.md": "PyTorch 1.7\n", "requirements.txt": "torch>=2.1\n"}, (2, 1)),
        # A folder of requirement files, as many projects split them.
        ({"requirements/base.txt": "torch>=1.9\n"}, (1, 9)),
        ({"requirements/base.txt": "numpy\n", "requirements/gpu.txt": "-r base.txt\n"
          "torch==1.12.1+cu113\n"}, (1, 12)),
        ({"requirements.txt": "torch>=2.1\n", "requirements/ci.txt": "torch>=1.11\n"},
         (1, 11)),
        ({"requirements/dev.txt": "pytest\n", "README.md": "PyTorch 2.8\n"}, (2, 6)),
    ],
)
def test_target_torch_is_the_project_floor(tmp_path, files, floor):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert project.settings_for(Config(root=tmp_path)).target_torch == floor


def test_a_floor_in_a_folder_of_requirement_files_is_stated(tmp_path):
    """`requirements/base.txt` states the floor as `requirements.txt` does: a fix that needs
    a newer torch is safe only from a stated floor."""
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "base.txt").write_text("numpy\ntorch>=2.3\n")
    settings = project.settings_for(Config(root=tmp_path))
    assert settings.target_torch == (2, 3) and settings.torch_stated


def test_the_setting_wins_over_the_project_files(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch>=1.8\n")
    settings = project.settings_for(Config(root=tmp_path, target_torch="2.8"))
    assert settings.target_torch == (2, 8)


def test_an_old_floor_gets_no_fix_that_needs_a_newer_torch(chdir_tmp, capsys):
    Path("requirements.txt").write_text("torch>=1.8\n")
    Path("train.py").write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n")
    main(["check", "--fix", "--select", "CUD106", "."])
    assert "torch.cuda.amp.GradScaler()" in Path("train.py").read_text()


def test_a_readme_floor_never_makes_a_fix_safe(tmp_path):
    (tmp_path / "README.md").write_text("Needs PyTorch 1.7.\n")
    settings = project.settings_for(Config(root=tmp_path))
    assert settings.target_torch == (1, 7) and not settings.torch_stated


_AMP = ("import torch\n\ndef step(model, x):\n    scaler = torch.cuda.amp.GradScaler()\n"
        "    with torch.cuda.amp.autocast():\n        return scaler, model(x)\n")


@pytest.mark.parametrize(("files", "kept"), [
    ({}, ()),  # the assumed 2.6: both fixes, unsafe (no floor stated)
    # code that needs torch < 2.0 elsewhere in the project: no torch.amp.GradScaler (2.3)
    ({"compat.py": "try:\n    from torch._six import inf\n"
                   "except ImportError:\n    from torch import inf\n"},
     ("torch.cuda.amp.GradScaler()",)),
    # a README naming torch 1.7: not even torch.autocast (1.10)
    ({"README.md": "Requirements: PyTorch 1.7\n"},
     ("torch.cuda.amp.GradScaler()", "torch.cuda.amp.autocast()")),
    # a stated floor wins over the code's old-torch signal
    ({"compat.py": "from torch._six import inf\n", "requirements.txt": "torch>=2.8\n"}, ()),
])
def test_old_torch_signals_lower_the_assumed_torch(chdir_tmp, files, kept):
    for name, text in files.items():
        Path(name).write_text(text)
    Path("train.py").write_text(_AMP)
    main(["check", "--fix", "--unsafe-fixes", "--select", "CUD106", "train.py", *files])
    fixed = Path("train.py").read_text()
    for call in ("torch.cuda.amp.GradScaler()", "torch.cuda.amp.autocast()"):
        assert (call in fixed) == (call in kept), fixed


def test_fixes_do_not_depend_on_torch_being_installed(chdir_tmp):
    """The same fixes in a process where `import torch` fails."""
    Path("train.py").write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n"
                                "x = torch.ones(1).cuda()\n")
    src = Path(__file__).resolve().parents[2] / "src"
    code = ("import sys; sys.modules['torch'] = None\n"
            "from cudalint.cli import main\n"
            "main(['check', '--diff', '--output-format', 'json', '.'])\n")
    runs = []
    for block in (True, False):
        script = code if block else code.split("\n", 1)[1]
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
                                timeout=120)
        runs.append(json.loads(result.stdout or "[]") if result.stdout.startswith("[") else
                    result.stdout)
    assert runs[0] == runs[1]


def test_project_class_with_its_own_cuda_method_makes_the_fix_unsafe(chdir_tmp):
    Path("pool.py").write_text("class Pool:\n    def cuda(self):\n        return 'pooled'\n")
    Path("train.py").write_text("def run(pool):\n    return pool.cuda()\n")
    main(["check", "--fix", "--select", "CUD102", "."])
    assert "pool.cuda()" in Path("train.py").read_text()
    main(["check", "--fix", "--unsafe-fixes", "--select", "CUD102", "."])
    assert "pool.to(pick_device())" in Path("train.py").read_text()


def _whole_module_passes(folder: Path, count: int, monkeypatch) -> tuple[int, list]:
    """How many times the fixer's import helpers read a whole module while a file with `count`
    fixable findings is checked with edits (json): work per file, not per finding."""
    lines = ["import torch", ""] + [f"def f{i}(x):\n    y = x + {i}\n    return y\n"
                                    for i in range(300)]
    lines += [f"t{i} = torch.ones(2).cuda()" for i in range(count)]
    (folder / "big.py").write_text("\n".join(lines) + "\n")
    passes = 0
    for name in ("uses", "missing", "imported_names"):
        original = getattr(imports, name)

        def counted(tree, *args, _original=original, **kwargs):
            nonlocal passes
            passes += isinstance(tree, cst.Module)
            return _original(tree, *args, **kwargs)

        monkeypatch.setattr(imports, name, counted)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check", "--no-cache", "--output-format", "json", "--select", "CUD102",
              str(folder / "big.py")])
    monkeypatch.undo()
    return passes, json.loads(out.getvalue())


def test_json_edits_read_the_module_once_per_file_not_once_per_finding(tmp_path, monkeypatch):
    one, found_one = _whole_module_passes(tmp_path, 1, monkeypatch)
    forty, found = _whole_module_passes(tmp_path, 40, monkeypatch)
    assert len(found_one) == 1 and len(found) == 40 and all(f["fix"]["edits"] for f in found)
    assert one > 0 and forty == one, (one, forty)


# -- where the standalone helper goes -----------------------------------------------------------
BLOCK_CUDALINT = ("import runpy, sys\nsys.modules['cudalint'] = None\nsys.path.insert(0, '.')\n"
                  "runpy.run_module(sys.argv[1], run_name='__main__')\n")


def test_a_package_gets_the_helper_inside_and_runs_without_cudalint(chdir_tmp, capsys):
    package = Path("pkg")
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "models" / "__init__.py").write_text("")
    (package / "models" / "net.py").write_text(
        "import torch\n\n\ndef place(x):\n    return x.cuda()\n")
    (package / "train.py").write_text(
        "import torch\n\nfrom pkg.models.net import place\n\n"
        "y = torch.zeros(1, device='cuda:0')\nprint(place(torch.ones(2)).device, y.device)\n")
    main(["check", "--fix", "."])
    out = capsys.readouterr().out
    assert "Wrote the device helper pkg/_device.py" in out
    assert "(standalone: needs only torch): pkg/models/net.py, pkg/train.py." in out  # who
    assert 'helper = "cudalint.device"' in out  # how to change it
    assert "from pkg._device import pick_device\n" in (package / "train.py").read_text()
    assert "from pkg._device import pick_device\n" in (package / "models" / "net.py").read_text()
    assert not Path("_device.py").exists()
    result = subprocess.run([sys.executable, "-c", BLOCK_CUDALINT, "pkg.train"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["cpu", "cpu"]
    # A second run neither checks nor rewrites the helper.
    helper = (package / "_device.py").read_bytes()
    assert main(["check", "--fix", "--select", "CUD1", "."]) == 0
    assert (package / "_device.py").read_bytes() == helper


def test_a_project_module_named_device_is_left_alone(chdir_tmp, capsys):
    Path("_device.py").write_text("GPU = 'the lab server'\n")
    Path("train.py").write_text("x = t.cuda()\n")
    main(["check", "--fix", "."])
    assert Path("_device.py").read_text() == "GPU = 'the lab server'\n"
    assert Path("_cudalint_device.py").is_file()
    assert Path("train.py").read_text().startswith("from _cudalint_device import pick_device")


@pytest.mark.parametrize("declared", [
    ("pyproject.toml", '[tool.cudalint]\nhelper = "cudalint.device"\n'),
    ("requirements.txt", "torch>=2.1\ncudalint>=0.1\n"),
])
def test_a_configured_helper_or_a_cudalint_dependency_writes_no_helper(chdir_tmp, capsys,
                                                                       declared):
    Path(declared[0]).write_text(declared[1])
    Path("train.py").write_text("x = t.cuda()\n")
    main(["check", "--fix", "."])
    assert "Wrote the device helper" not in capsys.readouterr().out
    assert Path("train.py").read_text().startswith("from cudalint.device import pick_device")
    assert not Path("_device.py").exists()

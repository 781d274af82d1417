"""CUD201 on realistic modules: guarded optional imports, prose, first-party packages."""

from __future__ import annotations

from pathlib import Path

from cudalint.config import Config
from cudalint.engine.contract import PythonRule
from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.lint.python import lint_python
from cudalint.engine.running.project_facts import ProjectFacts
from cudalint.engine.running.runner import RunOptions, check_file
from cudalint.engine.settings import Settings
from cudalint.finding import Finding, Severity
from cudalint.kinds import FileKind
from cudalint.rules import all_rules
from tests.lint import codes_at, findings, run_on

ATTENTION = '''\
"""Multi-head attention. Uses flash_attn (pip install flash-attn) when installed, else SDPA.

A cupy port lives in kernels/, and `import triton` is only needed for the fused kernels.
"""
import logging
import math

import torch
import torch.nn.functional as F
from torch import nn

try:
    from flash_attn import flash_attn_func
    HAS_FLASH_ATTN = True
except ImportError:
    flash_attn_func = None
    HAS_FLASH_ATTN = False

if HAS_FLASH_ATTN:
    from flash_attn.layers.rotary import apply_rotary_emb
else:
    apply_rotary_emb = None

import xformers.ops as xops

logger = logging.getLogger(__name__)
BACKENDS = {"triton": "fused", "flash_attn": "flash", "sdpa": "math"}


class Attention(nn.Module):
    # import cupy  (kept for reference)
    def forward(self, q, k, v):
        if flash_attn_func is not None and q.is_cuda:
            return flash_attn_func(q, k, v, causal=True)
        print("install flash_attn for speed")
        logger.warning("cupy not found, using %s", "triton")
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
'''


def test_attention_module(tmp_path):
    found = findings(tmp_path, ATTENTION, name="model/attention.py", codes=["CUD201"])
    assert codes_at(found) == [("CUD201", 13, 10), ("CUD201", 20, 10), ("CUD201", 24, 8)]
    flash, rotary, xformers = sorted(found, key=lambda f: f.location)
    assert flash.guarded and flash.severity is Severity.WARNING
    assert rotary.guarded and rotary.severity is Severity.WARNING
    assert not xformers.guarded and xformers.severity is Severity.ERROR
    assert "scaled_dot_product_attention" in flash.message
    assert "`xformers.ops`" in xformers.message


def test_import_aliases_and_submodules(tmp_path):
    source = (
        "import cupy as cp\n"
        "from numba import cuda, njit\n"
        "import numba.cuda as nc\n"
        "from cupyx.scipy import ndimage\n"
        "import nvidia.dali.fn as fn\n"
        "from nvidia import dali\n"
        "import numba\n"
        "from numba import prange\n"
    )
    found = findings(tmp_path, source, codes=["CUD201"])
    assert codes_at(found) == [
        ("CUD201", 1, 8), ("CUD201", 2, 19), ("CUD201", 3, 8), ("CUD201", 4, 6),
        ("CUD201", 5, 8), ("CUD201", 6, 20),
    ]
    messages = [f.message for f in sorted(found, key=lambda f: f.location)]
    assert "numpy" in messages[0]
    assert "@njit(parallel=True)" in messages[1]
    assert "torchvision" in messages[4]


def test_one_finding_per_module_per_statement(tmp_path):
    source = "from cupy import asarray, zeros, ones\nimport cupy, cupy\n"
    found = findings(tmp_path, source, codes=["CUD201"])
    assert codes_at(found) == [("CUD201", 1, 6), ("CUD201", 2, 8)]


def test_bitsandbytes_is_a_warning(tmp_path):
    (found,) = findings(tmp_path, "import bitsandbytes as bnb\n", codes=["CUD201"])
    assert found.severity is Severity.WARNING and not found.guarded
    assert "partly" in found.message
    # the portable path: a release with macOS wheels, and PyTorch's optimizer for the rest
    assert "bitsandbytes>=0.45" in found.message and "torch.optim.AdamW" in found.message


def test_cuda_availability_and_library_checks_guard(tmp_path):
    source = (
        "import importlib.util\n"
        "import torch\n"
        "if torch.cuda.is_available():\n"
        "    import pynvml\n"
        "if importlib.util.find_spec('triton') is not None:\n"
        "    import triton\n"
        "if not is_apex_available():\n"
        "    import apex\n"
        "else:\n"
        "    from apex.normalization import FusedLayerNorm\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    import cupy\n"
    )
    found = {f.location.row: f for f in findings(tmp_path, source, codes=["CUD201"])}
    assert sorted(found) == [4, 6, 8, 10, 13]
    assert found[4].guarded and found[6].guarded and found[10].guarded and found[13].guarded
    # The `not` branch runs exactly when apex is missing: not a guard.
    assert not found[8].guarded


def test_lazy_import_in_a_function_is_reported(tmp_path):
    source = "def fused_adam(params):\n    from apex.optimizers import FusedAdam\n" \
             "    return FusedAdam(params)\n"
    (found,) = findings(tmp_path, source, codes=["CUD201"])
    assert (found.location.row, found.location.column) == (2, 10)
    assert "AdamW(fused=True)" in found.message


def test_first_party_layout(tmp_path):
    (tmp_path / "apex").mkdir()
    (tmp_path / "apex" / "__init__.py").write_text("")
    (tmp_path / "src" / "triton").mkdir(parents=True)
    (tmp_path / "src" / "triton" / "__init__.py").write_text("")
    source = "import apex\nfrom apex.amp import scale\nimport triton.language as tl\nimport cupy\n"
    found = findings(tmp_path, source, name="train.py", codes=["CUD201"])
    assert codes_at(found) == [("CUD201", 4, 8)]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _in_project(root: Path, name: str) -> list[Finding]:
    """CUD201's findings in the file `name` of the project at `root`, with the settings a run
    gives it (engine/running/project_facts.py: the layout and the scan of the tree)."""
    path = root / name
    settings = ProjectFacts(Config(root=root), cache=False).for_file(path, FileKind.PYTHON)
    rules = tuple(rule for rule in all_rules() if rule.code == "CUD201")
    return check_file(path, FileKind.PYTHON, rules, settings, RunOptions()).findings


def test_single_file_modules_at_a_source_root_are_first_party(tmp_path):
    """`pynvml.py` at the root, `src/cudf.py` and a stub `vllm.pyi` are what `import pynvml`
    and the others import (ruff's `known-first-party` counts `<name>.py` under each source
    root); a module of another name, `nvml_utils.py`, makes nothing first-party."""
    _write(tmp_path, {"pyproject.toml": '[project]\nname = "gpu-monitor"\n',
                      "pynvml.py": "def nvmlInit():\n    pass\n",
                      "vllm.pyi": "def LLM() -> None: ...\n",
                      "src/cudf.py": "DataFrame = dict\n",
                      "nvml_utils.py": "import pynvml\n"})
    source = ("import pynvml\nfrom vllm import LLM\nimport cudf\nimport cupy\n"
              "from cute import kernel\n\npynvml.nvmlInit()\n")
    found = findings(tmp_path, source, name="monitor.py", codes=["CUD201"])
    assert codes_at(found) == [("CUD201", 4, 8), ("CUD201", 5, 6)]


def test_namespace_folders_holding_python_are_first_party(tmp_path):
    """A folder without `__init__.py` holding a Python file, at the root or in `src/`, is a
    namespace package of the project; a folder of no Python file (`cuda/` of kernels, an empty
    `triton/`, `data/`) is not, nor one that is a project of its own (a clone of apex with its
    setup.py, of cutlass with its .git): their imports are still reported."""
    _write(tmp_path, {
        "pyproject.toml": '[project]\nname = "llm-train"\n',
        "deepspeed/config.py": "ZERO_STAGE = 2\n",
        "src/flashinfer/kernels.py": "def decode(q, k, v):\n    return q\n",
        "src/other/run.py": "from flashinfer.kernels import decode\n",
        "cuda/rmsnorm.cu": "__global__ void rmsnorm() {}\n",
        "data/train.csv": "x,y\n1,2\n",
        "tests/test_train.py": "def test_step():\n    pass\n",
        "apex/setup.py": "from setuptools import setup\nsetup(name='apex')\n",
        "apex/apex/__init__.py": "",
        "cutlass/python/cutlass/__init__.py": "",
        "train.py": "from deepspeed.config import ZERO_STAGE\nimport tests\n"
                    "from cuda import cudart\nimport triton\nimport cupy\nimport apex\n"
                    "import cutlass\n",
    })
    (tmp_path / "triton").mkdir()
    (tmp_path / "cutlass" / ".git").mkdir()
    assert _in_project(tmp_path, "src/other/run.py") == []
    assert codes_at(_in_project(tmp_path, "train.py")) == [
        ("CUD201", 3, 18), ("CUD201", 4, 8), ("CUD201", 5, 8), ("CUD201", 6, 8),
        ("CUD201", 7, 8)]


def test_known_first_party_setting(tmp_path):
    config = Config(root=tmp_path, known_first_party=["triton", "nvidia.dali"])
    source = "import triton\nfrom nvidia.dali import fn\nimport triton_utils\nimport cupy\n"
    report, _ = run_on(tmp_path, source, codes=["CUD201"], config=config)
    assert codes_at(report.findings) == [("CUD201", 4, 8)]


def test_project_name_is_first_party(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "Flash-Attn"\n')
    (tmp_path / "setup.py").write_text("from setuptools import setup\n"
                                       "setup(name='xformers', packages=['mamba_ssm.ops'])\n")
    source = "import flash_attn\nimport xformers\nimport mamba_ssm\nimport vllm\n"
    found = findings(tmp_path, source, codes=["CUD201"])
    assert codes_at(found) == [("CUD201", 4, 8)]


def test_relative_and_lookalike_imports_are_silent(tmp_path):
    source = (
        "from . import triton\n"
        "from .cupy import kernels\n"
        "from ..apex import amp\n"
        "import triton_utils\n"
        "from mylib import cupy\n"
        "from torch import cuda\n"
        "import torch.cuda\n"
        "x = {'cupy': 1, 'triton': 2}\n"
        "def f(triton=None):\n    return triton\n"
    )
    assert findings(tmp_path, source, codes=["CUD201"]) == []


def test_dynamic_imports(tmp_path):
    source = (
        "import importlib\n"
        "cp = importlib.import_module('cupy')\n"
        "tl = __import__('triton.language')\n"
        "ok = importlib.import_module('numpy')\n"
        "local = importlib.import_module('.cupy', __package__)\n"
        "spec = importlib.util.find_spec('flash_attn')\n"
    )
    found = findings(tmp_path, source, codes=["CUD201"])
    assert codes_at(found) == [("CUD201", 2, 6), ("CUD201", 3, 6)]


def test_noqa(tmp_path):
    source = "import cupy  # noqa: CUD201\nimport pycuda.autoinit\n"
    found = findings(tmp_path, source, codes=["CUD201"])
    assert codes_at(found) == [("CUD201", 2, 8)]


def test_functions_are_read_where_they_import(tmp_path):
    """Only a function that imports reports; one that merely uses a package is not read, and
    an alias of `import_module` is followed into the function that calls it."""
    source = (
        "from importlib import import_module as load\n\n\n"
        "def attention():\n    import xformers.ops\n    return xformers.ops\n\n\n"
        "def by_name():\n    return load('xformers')\n\n\n"
        "def uses(xformers, x):\n    return xformers, x\n"
    )
    found = findings(tmp_path, source, codes=["CUD201"])
    assert codes_at(found) == [("CUD201", 5, 12), ("CUD201", 10, 12)]
    rules = tuple(r for r in all_rules() if issubclass(r, PythonRule))
    result = lint_python(source.encode(), tmp_path / "example.py", rules, Settings(),
                         prefilter=Prefilter.for_rules(rules, Settings()))
    assert result.module is not None and "return xformers, x" not in result.module.code

"""CUD305 in a project whose setup.py builds CUDA extensions."""

from __future__ import annotations

from cudalint.finding import Severity
from tests.lint import codes_at, findings
from tests.rules.cud3.project import write_project


def test_imports_inside_the_package(tmp_path):
    write_project(tmp_path)
    source = (
        "from . import _C\n"
        "from . import _cpu_ops\n"
        "from ._roi_align_cuda import roi_align\n"
        "import detlib._C as C\n"
        "from detlib import utils, _C\n"
        "import detlib\n"
        "try:\n"
        "    from detlib._C import nms\n"
        "except ImportError:\n"
        "    nms = None\n"
    )
    found = findings(tmp_path, source, name="detlib/ops.py", codes=["CUD305"])
    assert codes_at(found) == [
        ("CUD305", 1, 15), ("CUD305", 3, 7), ("CUD305", 4, 8), ("CUD305", 5, 27),
        ("CUD305", 8, 10),
    ]
    by_row = {f.location.row: f for f in found}
    assert by_row[1].severity is Severity.ERROR and not by_row[1].guarded
    assert by_row[8].guarded and by_row[8].severity is Severity.WARNING
    assert "`detlib._C`" in by_row[1].message


def test_parent_relative_import(tmp_path):
    write_project(tmp_path)
    source = "from .. import _C\nfrom ..layers import _C as layer_c\n"
    found = findings(tmp_path, source, name="detlib/layers/nms.py", codes=["CUD305"])
    assert codes_at(found) == [("CUD305", 1, 16)]


def test_same_name_in_another_package_is_silent(tmp_path):
    write_project(tmp_path)
    source = "from . import _C\nimport other._C\n"
    assert findings(tmp_path, source, name="other/ops.py", codes=["CUD305"]) == []


def test_scripts_outside_the_package(tmp_path):
    write_project(tmp_path)
    source = "import importlib\nfrom detlib import _C\nops = importlib.import_module('detlib._C')\n"
    found = findings(tmp_path, source, name="tools/benchmark.py", codes=["CUD305"])
    assert codes_at(found) == [("CUD305", 2, 20), ("CUD305", 3, 7)]


def test_unresolved_relative_import_matches_the_tail(tmp_path):
    write_project(tmp_path)
    # No __init__.py above the file: fall back to the name's tail.
    source = "from . import _C\nfrom . import _D\n"
    found = findings(tmp_path, source, name="loose/ops.py", codes=["CUD305"])
    assert codes_at(found) == [("CUD305", 1, 15)]


def test_no_setup_py_no_findings(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    assert findings(tmp_path, "from . import _C\n", name="pkg/ops.py", codes=["CUD305"]) == []


def test_extension_with_a_cpu_build_is_silent(tmp_path):
    # setup.py builds `detlib._ops` with CppExtension unless CUDA is there (detectron2's way).
    write_project(tmp_path)
    source = "from . import _ops\nfrom detlib._ops import nms\nfrom . import _cpu_ops\n"
    assert findings(tmp_path, source, name="detlib/nms.py", codes=["CUD305"]) == []

"""The shipped tables are what scripts/gen_mps_ops.py makes: a stale table fails here."""

from __future__ import annotations

import importlib.util
import json
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "src" / "cudalint" / "data" / "mps_ops"


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    path = ROOT / "scripts" / "gen_mps_ops.py"
    spec = importlib.util.spec_from_file_location("gen_mps_ops", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_table_of_the_installed_torch_is_fresh(gen: ModuleType, tmp_path: Path) -> None:
    source = gen.installed_source()
    shipped = gen.table_path(SHIPPED, source.version)
    assert shipped.exists(), f"no table for torch {source.version}: run scripts/gen_mps_ops.py"
    table, failures = gen.generate(source, tmp_path, wheel=False)
    assert failures == []
    assert gen.render(table) == shipped.read_text(), "stale: run scripts/gen_mps_ops.py"


def test_tables_from_wheels_reuse_the_traced_calls() -> None:
    tables = [json.loads(p.read_text()) for p in sorted(SHIPPED.glob("torch-*.json"))]
    traced = [t for t in tables if t["calls_method"].startswith("traced")]
    assert traced
    for table in tables:
        assert table["calls"] == traced[-1]["calls"] or table in traced


def test_parse_ops_merges_delegates_and_marks_implicit_composites(gen: ModuleType) -> None:
    text = """
- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: foo_out
    MPS: foo_out_mps
- func: foo(Tensor self) -> Tensor
  structured_delegate: foo.out
- func: bar(Tensor self) -> Tensor
- func: baz(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: baz
  autogen: baz.out
- func: qux(Tensor self) -> Tensor
  dispatch:
    CPU, CUDA: qux
    SparseCPU: qux_sparse
"""
    ops = gen.parse_ops(text)
    assert ops.flags == {"foo.out": "cpu cuda mps", "foo": "cpu cuda mps", "bar": "implicit",
                         "baz": "explicit", "qux": "cpu cuda"}
    assert ops.delegates == {"foo": "foo.out"}
    assert ops.autogen == {"baz.out": "baz"}
    assert gen.totals(ops) == {"entries": 5, "with_mps": 2, "composite_without_mps": 2,
                               "cuda_only": 1, "autogen": 1}


def _fake_wheel(path: Path, yaml_text: str, version: str) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("torchgen/packaged/ATen/native/native_functions.yaml", yaml_text)
        zf.writestr(f"torch-{version}.dist-info/METADATA",
                    f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    return path


def test_table_from_a_wheel(gen: ModuleType, tmp_path: Path) -> None:
    yaml_text = "- func: foo(Tensor self) -> Tensor\n  dispatch:\n    CPU, CUDA: foo\n"
    wheel = _fake_wheel(tmp_path / "torch-9.1.0-cp311-none-any.whl", yaml_text, "9.1.0+cu999")
    source = gen.wheel_source(wheel)
    assert (source.version, source.text) == ("9.1.0", yaml_text)
    traced = SHIPPED / "torch-2.13.0.json"
    table, failures = gen.generate(source, tmp_path, wheel=True, calls_from=traced)
    assert failures == []
    assert table["torch"] == "9.1.0"
    assert table["ops"] == {"foo": "cpu cuda"}
    assert table["calls"] == json.loads(traced.read_text())["calls"]
    assert table["calls_method"].startswith("reused from torch-2.13.0.json (traced")
    assert gen.main(["--wheel", str(wheel), "--out", str(tmp_path),
                     "--calls-from", str(traced)]) == 0
    assert json.loads((tmp_path / "torch-9.1.0.json").read_text()) == table


def test_check_reports_a_stale_table(gen: ModuleType, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    yaml_text = "- func: foo(Tensor self) -> Tensor\n"
    wheel = _fake_wheel(tmp_path / "t.whl", yaml_text, "9.2.0")
    argv = ["--wheel", str(wheel), "--out", str(tmp_path),
            "--calls-from", str(SHIPPED / "torch-2.13.0.json")]
    assert gen.main([*argv, "--check"]) == 1
    assert gen.main(argv) == 0
    assert gen.main([*argv, "--check"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_sample_keys_are_unique(gen: ModuleType) -> None:
    keys = [sample.key for sample in gen.SAMPLES]
    assert len(keys) == len(set(keys))

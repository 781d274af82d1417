"""CUD104, CUD105, CUD107, CUD109, CUD110 on realistic code; a fixed benchmark runs on CPU."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
import torch

from cudalint.config import Config
from cudalint.finding import Applicability, Severity
from tests.lint import codes_at, findings, run_on
from tests.warm_python import WarmPython

CUDA_API = ["CUD104", "CUD105", "CUD107", "CUD109", "CUD110"]
CUD1 = ["CUD101", "CUD102", "CUD103", *CUDA_API]

BENCHMARK = textwrap.dedent('''\
    """Time a small MLP's training step with CUDA events."""
    import argparse

    import torch
    import torch.cuda as tc
    from torch import nn
    from torch.cuda import synchronize

    torch.backends.cudnn.benchmark = True
    torch.cuda.set_device(0)


    def bench(model, x, iters):
        """Milliseconds per step; call torch.cuda.synchronize() before reading clocks."""
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.reset_peak_memory_stats()
        for _ in range(2):  # warm-up: torch.cuda.empty_cache() would not help here
            model(x).sum().backward()
        synchronize()
        start.record()
        for _ in range(iters):
            model(x).sum().backward()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / iters


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--iters", type=int, default=5)
        args = parser.parse_args()
        torch.manual_seed(0)
        torch.cuda.manual_seed(0)
        torch.cuda.manual_seed_all(0)
        print(f"running on {torch.cuda.get_device_name(0)}")
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
        x = torch.randn(32, 64, device="cuda")
        ms = bench(model, x, args.iters)
        print(f"time per step: {ms:.4f} ms")
        print(f"peak memory: {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")
        print(f"allocated now: {torch.cuda.memory_allocated(0)} bytes")
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        print("call torch.cuda.empty_cache() to free memory")
        tc.empty_cache()


    if __name__ == "__main__":
        main()
''')


def _run(script: Path, warm: WarmPython) -> subprocess.CompletedProcess[str]:
    """`python [str(script), "--iters", "3"]` forked from a process that imported torch once."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("CUDALINT_DEVICE", None)
    return warm.run([str(script), "--iters", "3"], cwd=script.parent, env=env)


def test_benchmark_findings(tmp_path):
    found = [f for f in findings(tmp_path, BENCHMARK, name="bench.py", codes=CUDA_API)]
    assert codes_at(found) == [
        ("CUD105", 10, 1),  # torch.cuda.set_device(0) at module level
        ("CUD105", 15, 13),  # Event
        ("CUD105", 16, 11),
        ("CUD105", 17, 5),  # reset_peak_memory_stats
        ("CUD105", 20, 5),  # synchronize() imported from torch.cuda
        ("CUD105", 25, 5),
        ("CUD105", 34, 5),  # manual_seed
        ("CUD105", 35, 5),
        ("CUD105", 36, 25),  # get_device_name
        ("CUD105", 41, 27),  # max_memory_allocated
        ("CUD105", 42, 29),
        ("CUD105", 44, 9),  # guarded synchronize
        ("CUD105", 46, 5),  # tc.empty_cache()
        ("CUD107", 9, 1),
        ("CUD109", 10, 1),
    ]
    by_row = {(f.code, f.location.row): f for f in found}
    assert by_row["CUD105", 25].severity is Severity.ERROR
    assert by_row["CUD105", 34].severity is Severity.WARNING  # a seed that does nothing
    assert by_row["CUD105", 46].severity is Severity.INFO  # empty_cache: harmless
    assert by_row["CUD107", 9].severity is Severity.INFO
    guarded = by_row["CUD105", 44]
    assert guarded.guarded and guarded.severity is Severity.WARNING  # error, lowered
    assert guarded.fix is not None
    # Both codes at the module-level set_device; only CUD105 carries the fix.
    assert by_row["CUD105", 10].fix is not None
    assert by_row["CUD109", 10].fix is None
    assert all(f.fix is not None and f.fix.applicability is Applicability.SAFE
               for f in found if f.code == "CUD105")


@pytest.mark.skipif(torch.cuda.is_available(), reason="shows what happens without CUDA")
def test_benchmark_fails_before_and_runs_after_fix(tmp_path, warm_python):
    script = tmp_path / "bench.py"
    script.write_text(BENCHMARK)
    before = _run(script, warm_python)
    assert before.returncode != 0
    assert "torch.cuda.set_device(0)" in before.stderr  # the import fails

    report, after = run_on(tmp_path, BENCHMARK, name="bench.py", codes=CUD1, fix=True)
    fixed = after.decode()
    assert "from cudalint.device import" in fixed
    helper_import = fixed.split("from cudalint.device import", 1)[1].split(")", 1)[0]
    for name in ("Event", "synchronize", "manual_seed", "manual_seed_all",
                 "max_memory_allocated", "empty_cache", "set_device", "get_device_name"):
        assert f"    {name}," in helper_import or f"import {name}" in fixed
    assert "torch.cuda.synchronize()" not in fixed.replace(
        '"""Milliseconds per step; call torch.cuda.synchronize() before reading clocks."""', "")
    assert '"call torch.cuda.empty_cache() to free memory"' in fixed  # prose kept
    assert "from torch.cuda import synchronize" not in fixed
    left = {f.code for f in report.findings}
    assert left <= {"CUD107"}, report.findings  # the flag stays: it has no fix

    result = _run(script, warm_python)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    assert float(lines["time per step"].removesuffix(" ms")) > 0
    assert lines["peak memory"] == "0.0 MiB"  # nothing is tracked on CPU
    assert lines["allocated now"] == "0 bytes"
    assert any(line.startswith("running on ") for line in result.stdout.splitlines())

    # A second --fix changes nothing: the helper calls are not reported again.
    again, unchanged = run_on(tmp_path, after, name="bench.py", codes=CUD1, fix=True)
    assert unchanged == after
    assert {f.code for f in again.findings} <= {"CUD107"}


def test_prose_docstrings_and_comments_are_silent(tmp_path):
    source = textwrap.dedent('''\
        """Call torch.cuda.synchronize() and torch.cuda.FloatTensor(3) here."""
        import logging
        # torch.cuda.manual_seed(0); torch.backends.cudnn.benchmark = True
        print("torch.cuda.get_device_capability() says", "torch.version.cuda")
        logging.info("torch.cuda.empty_cache() freed memory")
        HELP = {"torch.cuda.Event": "timing"}
        ''')
    assert findings(tmp_path, source, codes=CUDA_API) == []


def test_guards_lower_but_never_hide(tmp_path):
    source = textwrap.dedent('''\
        import torch

        def setup():
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            cap = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8
            late = torch.cuda.get_device_capability()
            try:
                import apex
                torch.cuda.set_device(0)
            except ImportError:
                pass
        ''')
    found = {(f.code, f.location.row): f for f in findings(tmp_path, source, codes=CUDA_API)}
    assert found["CUD105", 5].guarded and found["CUD105", 5].severity is Severity.WARNING
    assert found["CUD110", 6].guarded and found["CUD110", 6].severity is Severity.WARNING
    assert not found["CUD110", 7].guarded and found["CUD110", 7].severity is Severity.ERROR
    assert found["CUD105", 10].guarded
    assert ("CUD110", 4) not in found  # is_available() is never a finding


def test_module_level_call_is_cud105_and_cud109(tmp_path):
    source = "import torch\ntorch.cuda.synchronize()\n"
    found = findings(tmp_path, source, codes=CUDA_API)
    assert codes_at(found) == [("CUD105", 2, 1), ("CUD109", 2, 1)]
    # The fix is not tied to CUD109 being enabled, nor CUD109 to CUD105.
    _, after = run_on(tmp_path, source, codes=["CUD105"], fix=True)
    assert after.decode().endswith("\nsynchronize()\n")
    report, _ = run_on(tmp_path, source, codes=["CUD109"], fix=True)
    assert [f.code for f in report.findings] == ["CUD109"]


def test_configured_helper_module(tmp_path):
    config = Config(root=tmp_path, helper="myproj.device")
    source = ("import torch\nfrom torch.cuda import manual_seed\nmanual_seed(1)\n"
              "torch.cuda.empty_cache()\n")
    _, after = run_on(tmp_path, source, codes=["CUD105"], fix=True, config=config)
    assert after.decode() == (
        "from myproj.device import empty_cache, manual_seed\nmanual_seed(1)\nempty_cache()\n"
    )


def test_names_bound_elsewhere_are_not_overwritten(tmp_path):
    source = textwrap.dedent('''\
        import torch

        def empty_cache():
            pass

        def step(device_count=2):
            torch.cuda.empty_cache()
            return torch.cuda.device_count()
        ''')
    report, after = run_on(tmp_path, source, codes=["CUD105"], unsafe=True)
    assert len(report.findings) == 2
    assert all(f.fix is None for f in report.findings)
    assert after.decode() == source


def test_partly_moved_import(tmp_path):
    source = textwrap.dedent('''\
        from torch.cuda import Stream, synchronize

        def run():
            s = Stream()
            synchronize()
        ''')
    _, after = run_on(tmp_path, source, codes=["CUD105"], fix=True)
    assert after.decode() == textwrap.dedent('''\
        from torch.cuda import Stream
        from cudalint.device import synchronize

        def run():
            s = Stream()
            synchronize()
        ''')


def test_cuda_only_apis(tmp_path):
    source = textwrap.dedent('''\
        import torch
        from torch.profiler import ProfilerActivity

        ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
        CUDA_MAJOR = int(torch.version.cuda.split(".")[0]) if torch.version.cuda else 0

        def capture(model, x):
            if torch.cuda.get_device_capability()[0] < 8:
                return model(x)
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                torch.cuda.nvtx.range_push("capture")
                with torch.cuda.graph(g):
                    y = model(x)
                torch.cuda.nvtx.range_pop()
            torch.cuda.current_stream().wait_stream(s)
            return y, torch.cuda.get_device_properties(0).total_memory
        ''')
    found = findings(tmp_path, source, codes=["CUD110"])
    rows = {(f.location.row, f.location.column): f.severity for f in found}
    assert rows == {
        (4, 37): Severity.INFO,  # ProfilerActivity.CUDA
        (5, 18): Severity.INFO,  # torch.version.cuda parsed, under `if torch.version.cuda`
        (8, 8): Severity.ERROR,
        (10, 9): Severity.ERROR,
        (11, 9): Severity.ERROR,
        (12, 10): Severity.INFO,  # torch.cuda.stream(s): a no-op context
        (13, 9): Severity.ERROR,
        (14, 14): Severity.ERROR,
        (16, 9): Severity.ERROR,
        (17, 5): Severity.ERROR,
        (18, 15): Severity.ERROR,
    }


def test_backend_flags(tmp_path):
    source = textwrap.dedent('''\
        import torch
        from torch.backends import cudnn

        def configure(args):
            cudnn.benchmark = not args.deterministic
            torch.backends.cudnn.deterministic = args.deterministic
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
            if torch.backends.cudnn.is_available() and cudnn.version() > 8000:
                was = torch.backends.cudnn.benchmark
        ''')
    found = findings(tmp_path, source, codes=["CUD107"])
    assert [(f.location.row, f.location.column) for f in found] == [(5, 5), (6, 5), (7, 5), (8, 5)]
    messages = {f.location.row: f.message for f in found}
    assert "torch.use_deterministic_algorithms(True)" in messages[6]
    assert 'torch.set_float32_matmul_precision("high")' in messages[7]
    assert 'torch.set_float32_matmul_precision("high")' in messages[8]
    assert all(f.severity is Severity.INFO for f in found)


def test_legacy_tensor_types(tmp_path):
    source = textwrap.dedent('''\
        import torch

        use_cuda = torch.cuda.is_available()
        Tensor = torch.cuda.FloatTensor if use_cuda else torch.FloatTensor

        def batch(x, n):
            ones = torch.cuda.FloatTensor(n, 3).fill_(1.0)
            labels = torch.cuda.LongTensor([0, 1, 1])
            return x.type(torch.cuda.FloatTensor), ones, labels
        ''')
    report, after = run_on(tmp_path, source, codes=["CUD104"], fix=True)
    assert after.decode() == textwrap.dedent('''\
        import torch
        from cudalint.device import pick_device

        use_cuda = torch.cuda.is_available()
        Tensor = torch.cuda.FloatTensor if use_cuda else torch.FloatTensor

        def batch(x, n):
            ones = torch.cuda.FloatTensor(n, 3).fill_(1.0)
            labels = torch.tensor([0, 1, 1], dtype=torch.int64, device=pick_device())
            return x.to(pick_device(), torch.float32), ones, labels
        ''')
    left = {f.location.row: f for f in report.findings}  # rows after the added import
    assert set(left) == {5, 8}
    assert left[5].guarded and left[5].severity is Severity.WARNING
    assert left[8].fix is None  # `n` may be a size or data


ROOTS = textwrap.dedent('''\
    import torch
    import torch as th
    import torch.cuda as tc
    from torch import cuda
    from torch.cuda import amp, Stream
    from . import torch as local_torch
    import numpy as np

    class Runner:
        def __init__(self):
            self.stream = th.cuda.Stream()
            self.torch = local_torch
            self.torch.cuda.synchronize()
            self.cuda = cuda

        def step(self, x):
            tc.synchronize()
            cuda.synchronize()
            self.cuda.synchronize()
            np.cuda.synchronize()
            get_torch().cuda.synchronize()
            local_torch.cuda.synchronize()
            with amp.autocast():
                torch.cuda.get_device_capability()
            return Stream(), th.cuda.current_stream(), x.cuda.synchronize()
    ''')


def test_only_references_rooted_in_torch_are_looked_up(tmp_path, monkeypatch):
    """The walk looks up an attribute only where its leftmost name is torch or an alias of
    something in torch: skipping the others finds the same uses as looking every one up."""
    from cudalint.rules.cud1_device import references

    expected = codes_at(findings(tmp_path, ROOTS, codes=CUDA_API))
    assert {row for _, row, _ in expected} >= {11, 17, 18, 24, 25}
    assert not {13, 19, 20, 21, 22} & {row for _, row, _ in expected}
    monkeypatch.setattr(references, "_rooted_in_torch", lambda ctx, node: True)
    assert codes_at(findings(tmp_path, ROOTS, codes=CUDA_API)) == expected


def test_a_comparison_with_an_indexed_cuda_device_guards(tmp_path):
    """`device == "cuda:0"` is as much a CUDA check as `device == "cuda"`; `"cpu"` is none."""
    source = textwrap.dedent('''\
        import torch

        def step(device):
            if device == "cuda:0":
                torch.cuda.synchronize()
            if "cuda:1" == device.type:
                torch.cuda.synchronize()
            if device == "cpu":
                torch.cuda.synchronize()
        ''')
    found = {(f.code, f.location.row): f for f in findings(tmp_path, source, codes=CUDA_API)}
    assert found["CUD105", 5].guarded and found["CUD105", 5].severity is Severity.WARNING
    assert found["CUD105", 7].guarded
    assert not found["CUD105", 9].guarded and found["CUD105", 9].severity is Severity.ERROR

"""More forms of what guards a finding and what does not (engine/walk/guards.py), seen through
the rules: NCCL's availability probe, an early exit whose test is an `or`, a comparison with
True/False, pytest CUDA markers; and what is no guard: a parameter named `use_cuda`, `cuda` or
`gpu` (the caller's switch), and an `except ImportError` that only raises again."""

from __future__ import annotations

import textwrap

from cudalint.finding import Applicability, Severity
from tests.lint import codes_at, findings, run_on


def _found(tmp_path, source: str, codes: list[str], name: str = "example.py"):
    return findings(tmp_path, textwrap.dedent(source), name=name, codes=codes)


def _guarded(tmp_path, source: str, codes: list[str], name: str = "example.py"
             ) -> dict[int, bool]:
    return {f.location.row: f.guarded for f in _found(tmp_path, source, codes, name)}


def test_nccl_chosen_where_nccl_is_available_is_guarded_and_not_rewritten(tmp_path):
    source = '''\
        import torch
        import torch.distributed as dist
        from torch.distributed import is_nccl_available


        def init(rank, world):
            backend = "nccl" if dist.is_nccl_available() else "gloo"
            dist.init_process_group(backend, rank=rank, world_size=world)


        def init_again():
            torch.distributed.init_process_group(
                "nccl" if torch.distributed.is_nccl_available() else "gloo")
            if is_nccl_available():
                torch.cuda.set_device(0)
            print("nccl is used where available")
            dist.init_process_group("nccl")
        '''
    found = _found(tmp_path, source, ["CUD701", "CUD105"])
    by_row = {f.location.row: f for f in found}
    assert sorted(by_row) == [7, 13, 15, 17]
    for row in (7, 13, 15):
        assert by_row[row].guarded, row
        assert by_row[row].severity is Severity.WARNING
    assert "raises on a Mac" not in by_row[7].message
    assert by_row[7].fix is None and by_row[13].fix is None
    assert not by_row[17].guarded and by_row[17].severity is Severity.ERROR


def test_an_early_exit_whose_test_is_an_or_guards_the_rest(tmp_path):
    source = '''\
        import torch


        def attention(q, flash):
            if not torch.cuda.is_available() or not flash:
                return q
            torch.cuda.synchronize()
            return q.cuda()


        def both_needed(q, flash):
            if not torch.cuda.is_available() and not flash:
                return q
            return q.cuda()


        def compared(q):
            if q.is_cuda == False:
                return q
            torch.cuda.synchronize()
            if torch.cuda.is_available() is True:
                q = q.cuda()
            return q
        '''
    assert _guarded(tmp_path, source, ["CUD102", "CUD105"]) == {
        7: True, 8: True,  # after `not available or not flash: return`
        14: False,  # `and`: it returns only where both are missing
        20: True, 22: True,
    }


def test_a_parameter_named_for_cuda_is_the_callers_switch(tmp_path):
    source = '''\
        import torch


        def f(x, use_cuda=True):
            if use_cuda:
                x = x.cuda()
            return x


        def g(x, cuda=False, gpu=False, has_cuda=False):
            if cuda:
                x = x.cuda()
            if gpu:
                torch.cuda.synchronize()
            if has_cuda:  # says CUDA is there, not that the user wants it
                torch.cuda.synchronize()
            return x


        def h(x, use_cuda):
            use_cuda = use_cuda and torch.cuda.is_available()
            if use_cuda:
                x = x.cuda()
            return x
        '''
    assert _guarded(tmp_path, source, ["CUD102", "CUD105"]) == {
        6: False, 12: False, 14: False, 16: True, 23: True,
    }


def test_an_import_whose_handler_only_raises_is_required(tmp_path):
    source = '''\
        import sys
        import warnings

        try:
            import triton
        except ImportError:
            raise RuntimeError("the fused kernels need triton")

        try:
            import cupy as cp
        except ImportError as error:
            warnings.warn(f"cupy is missing: {error}")
            raise

        try:
            import pycuda
        except ImportError:
            print("pycuda is required")
            sys.exit(1)

        try:
            import flash_attn
        except ImportError:
            flash_attn = None

        try:
            import xformers
        except ImportError:
            if strict:
                raise
            xformers = None
        '''
    found = _found(tmp_path, source, ["CUD201"])
    assert {f.location.row: (f.guarded, f.severity) for f in found} == {
        5: (False, Severity.ERROR),
        10: (False, Severity.ERROR),
        16: (False, Severity.ERROR),
        22: (True, Severity.WARNING),  # falls back to None
        27: (True, Severity.WARNING),  # falls back unless strict
    }


CUDA_TESTS = '''\
    import unittest

    import pytest
    import torch
    from tests.markers import requires_cuda

    requires_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
    cpu_only = pytest.mark.skipif(torch.cuda.is_available(), reason="CPU only")


    @pytest.mark.requires_cuda
    def test_marked():
        x = torch.ones(2).cuda()


    @pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA")
    def test_skipped():
        x = torch.ones(2, device="cuda")
        assert x.is_cuda


    @requires_gpu
    def test_own_marker():
        torch.cuda.synchronize()


    @requires_cuda
    def test_imported_marker():
        torch.ones(2).cuda()


    @unittest.skipUnless(torch.cuda.is_available(), "needs CUDA")
    class TestKernels(unittest.TestCase):
        def test_sum(self):
            torch.ones(2).cuda()


    @cpu_only
    def test_cpu():
        torch.ones(2).cuda()


    @pytest.mark.slow
    def test_plain():
        torch.ones(2).cuda()
    '''


def test_tests_marked_for_cuda_are_guarded(tmp_path):
    found = _found(tmp_path, CUDA_TESTS, ["CUD101", "CUD102", "CUD105", "CUD112"],
                   name="tests/test_kernels.py")
    assert codes_at(found) == [
        ("CUD101", 18, 30), ("CUD102", 13, 23), ("CUD102", 29, 19), ("CUD102", 35, 23),
        ("CUD102", 40, 19), ("CUD102", 45, 19), ("CUD105", 24, 5),
    ]  # no CUD112 for the test's own `assert x.is_cuda`
    assert {f.location.row: f.guarded for f in found} == {
        13: True, 18: True, 24: True, 29: True, 35: True, 40: False, 45: False,
    }


def test_no_safe_fix_rewrites_a_test_that_exists_to_check_cuda(tmp_path):
    source = textwrap.dedent(CUDA_TESTS)
    codes = ["CUD101", "CUD102", "CUD105"]
    found = _found(tmp_path, CUDA_TESTS, codes, name="tests/test_kernels.py")
    fixes = {f.location.row: f.fix.applicability for f in found if f.fix is not None}
    assert {row: fixes[row] for row in (13, 18, 24, 29, 35)} == dict.fromkeys(
        (13, 18, 24, 29, 35), Applicability.UNSAFE)
    assert fixes[45] is Applicability.SAFE  # an unmarked test: fixed as any code
    _, after = run_on(tmp_path, source, name="tests/test_kernels.py", codes=codes, fix=True)
    text = after.decode()
    # kept without --unsafe-fixes: the marked tests' lines; rewritten: the other two tests'
    assert text.count("torch.ones(2).cuda()") == 3
    assert "    torch.cuda.synchronize()\n" in text and 'device="cuda"' in text
    assert text.endswith("def test_plain():\n    torch.ones(2).to(pick_device())\n")


MARKED_MODULE = '''\
    import pytest
    import torch

    pytestmark = [
        pytest.mark.slow,
        pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
    ]

    DEVICE = torch.device("cuda")


    @pytest.fixture
    def model():
        return torch.nn.Linear(4, 4).cuda()


    def test_forward(model):
        x = torch.randn(2, 4).cuda()
        assert model(x).is_cuda


    class TestBackward:
        def test_grad(self, model):
            model(torch.randn(2, 4, device="cuda")).sum().backward()
            torch.cuda.synchronize()
    '''


def test_a_modules_pytestmark_guards_its_tests_as_a_decorator_would(tmp_path):
    """pytest gives a module's `pytestmark` to each of its tests: a CUDA skip there guards
    its functions and classes (tests, fixtures, helpers: they run only for its tests), not
    its top-level statements, which run when pytest imports it even if every test is
    skipped."""
    codes = ["CUD101", "CUD102", "CUD105", "CUD112"]
    found = _found(tmp_path, MARKED_MODULE, codes, name="tests/test_mlp.py")
    assert {(f.location.row, f.code): (f.guarded, f.severity) for f in found} == {
        (9, "CUD101"): (False, Severity.ERROR),  # at import: not a test
        (14, "CUD102"): (True, Severity.WARNING),
        (18, "CUD102"): (True, Severity.WARNING),
        (24, "CUD101"): (True, Severity.WARNING),
        (25, "CUD105"): (True, Severity.WARNING),
    }  # no CUD112 for the test's own `assert ...is_cuda`
    fixes = {f.location.row: f.fix.applicability for f in found if f.fix is not None}
    assert fixes == {9: Applicability.SAFE, 14: Applicability.UNSAFE,
                     18: Applicability.UNSAFE, 24: Applicability.UNSAFE,
                     25: Applicability.UNSAFE}  # as under a decorator: a test of CUDA


def test_pytestmark_forms_that_guard_and_that_do_not(tmp_path):
    """A single skip, a CUDA-named marker, the project's own marker, and a class's own
    `pytestmark` guard; a skip that is not about CUDA does not."""
    marks = {
        'pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA")': True,
        "pytest.mark.requires_cuda": True,
        "(requires_gpu,)": True,
        'pytest.mark.skipif(sys.platform == "win32", reason="POSIX only")': False,
        "[pytest.mark.slow, pytest.mark.timeout(60)]": False,
        "pytest.mark.skipif(torch.cuda.is_available(), reason='CPU only')": False,
    }
    for index, (mark, guards) in enumerate(marks.items()):
        source = f'''\
            import sys

            import pytest
            import torch

            requires_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA")
            pytestmark = {mark}


            def test_sum():
                assert torch.ones(3).cuda().sum() == 3
            '''
        found = _found(tmp_path, source, ["CUD102"], name=f"tests/test_m{index}.py")
        assert [(f.location.row, f.guarded) for f in found] == [(11, guards)], mark
    source = '''\
        import pytest
        import torch


        class TestKernels:
            pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA")

            def test_sum(self):
                torch.ones(3).cuda()


        def test_plain():
            torch.ones(3).cuda()
        '''
    assert _guarded(tmp_path, source, ["CUD102"], name="tests/test_cls.py") == {
        9: True, 13: False}

"""What makes a finding guarded (engine/walk/guards.py, engine/walk/context.py), seen through the
rules: availability kept in a variable, early exits, conditional expressions, skip decorators; and
what does not: a user's own switch, a comparison with something that is not a device.

The early-exit and variable forms depend on statements before the guarded one; these tests
put them far apart, at module level and nested, so that a walk visiting only some
statements still finds them."""

from __future__ import annotations

import textwrap

from cudalint.finding import Severity
from cudalint.output.text import headline
from tests.lint import findings, run_on


def _guarded(tmp_path, source: str, codes: list[str]) -> dict[int, bool]:
    found = findings(tmp_path, textwrap.dedent(source), codes=codes)
    return {f.location.row: f.guarded for f in found}


def test_availability_kept_in_a_variable(tmp_path):
    source = '''\
        import torch

        has_gpu = torch.cuda.is_available()


        def train(model, args):
            use_cuda = torch.cuda.is_available() and not args.no_cuda
            if use_cuda:
                model = model.cuda()
            if has_gpu:
                torch.cuda.synchronize()
            if not has_gpu:
                print("model.cuda() is skipped on this machine")
            else:
                torch.cuda.empty_cache()
            return model


        class Runner:
            def __init__(self):
                self.on_gpu = torch.cuda.device_count() > 0

            def step(self, x):
                if self.on_gpu:
                    return x.cuda()
                return x
        '''
    assert _guarded(tmp_path, source, ["CUD102", "CUD105"]) == {
        9: True, 11: True, 15: True, 21: False, 25: True,  # 21: device_count() itself
    }


def test_a_variable_also_assigned_a_users_choice_is_no_guard(tmp_path):
    source = '''\
        import torch


        def train(model, args):
            use_cuda = torch.cuda.is_available()
            if args.force_cpu_check:
                use_cuda = args.cuda
            if use_cuda:
                model = model.cuda()
            return model
        '''
    assert _guarded(tmp_path, source, ["CUD102"]) == {9: False}


def test_a_users_switch_is_no_guard(tmp_path):
    source = '''\
        def to_gpu(args, cfg, opt, model, use_cuda):
            if args.use_cuda:
                model = model.cuda()
            if cfg.cuda:
                model = model.cuda()
            if opt.gpu:
                model = model.cuda()
            if use_cuda:  # a parameter: the caller's switch, not a probe
                model = model.cuda()
            return model
        '''
    assert _guarded(tmp_path, source, ["CUD102"]) == {3: False, 5: False, 7: False, 9: False}


def test_an_early_exit_guards_the_rest_of_its_block(tmp_path):
    source = '''\
        import torch


        def step(x):
            torch.cuda.synchronize()
            if not torch.cuda.is_available():
                return x
            y = x * 2
            return y.cuda()


        def scan(batches):
            for batch in batches:
                if not batch.is_cuda:
                    continue
                batch.cuda()
            torch.cuda.empty_cache()
        '''
    assert _guarded(tmp_path, source, ["CUD102", "CUD105"]) == {
        5: False, 9: True, 16: True, 17: False,
    }


def test_a_module_level_exit_guards_the_functions_defined_after_it(tmp_path):
    # They only exist where the import got past the exit.
    source = '''\
        import sys

        import torch


        def before():
            torch.cuda.synchronize()


        if not torch.cuda.is_available():
            print("this benchmark needs a GPU")
            sys.exit(1)

        WARMUP = 10
        torch.cuda.synchronize()


        def after():
            torch.cuda.synchronize()
        '''
    found = findings(tmp_path, textwrap.dedent(source), codes=["CUD105", "CUD112"])
    assert {(f.code, f.location.row, f.guarded) for f in found} == {
        ("CUD105", 7, False), ("CUD112", 10, False), ("CUD105", 15, True),
        ("CUD105", 19, True),
    }


def test_an_else_that_raises_guards_what_follows(tmp_path):
    source = '''\
        import torch


        def prepare(model):
            if torch.cuda.is_available():
                print("found a GPU")
            else:
                raise RuntimeError("a GPU is required")
            return model.cuda()
        '''
    found = findings(tmp_path, textwrap.dedent(source), codes=["CUD102", "CUD112"])
    assert {(f.code, f.location.row, f.guarded) for f in found} == {
        ("CUD112", 5, False), ("CUD102", 9, True),
    }


def test_an_exit_that_is_no_cuda_check_guards_nothing(tmp_path):
    source = '''\
        import torch


        def step(x, args):
            if not args.ready:
                return x
            torch.cuda.synchronize()
            return x
        '''
    assert _guarded(tmp_path, source, ["CUD105"]) == {7: False}


def test_skip_decorators_guard_a_test(tmp_path):
    source = '''\
        import unittest

        import pytest
        import torch
        from torch.utils.cpp_extension import CUDA_HOME


        @pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
        def test_kernel():
            assert torch.ones(2).cuda().sum() == 2


        @unittest.skipIf(CUDA_HOME is None, "needs the CUDA toolkit")
        def test_build():
            torch.ones(2).cuda()


        @pytest.mark.skipif(torch.__version__ < "2", reason="old torch")
        def test_other():
            torch.ones(2).cuda()
        '''
    assert _guarded(tmp_path, source, ["CUD102"]) == {10: True, 15: True, 20: False}


def test_a_conditional_expression_guards_its_branch(tmp_path):
    source = '''\
        import torch
        import torch.distributed as dist

        backend = "gloo" if not torch.cuda.is_available() else "nccl"
        dist.init_process_group(backend)
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        dist.init_process_group("nccl" if args.distributed else "gloo")
        '''
    found = findings(tmp_path, textwrap.dedent(source), codes=["CUD701"])
    by_row = {f.location.row: f for f in found}
    assert sorted(by_row) == [4, 6, 7]
    assert by_row[4].guarded and by_row[6].guarded and not by_row[7].guarded
    assert by_row[4].severity is Severity.WARNING
    assert "raises on a Mac" not in by_row[4].message
    assert "raises on a Mac" in by_row[7].message


def test_a_compound_test_is_a_guard_when_one_operand_is(tmp_path):
    source = '''\
        import torch


        def fused(impl, x, ready):
            if impl == "cuda" and x.device.type == "cuda" and ready():
                torch.cuda.synchronize()
            if impl == "cuda":
                torch.cuda.synchronize()
            if x.is_cuda or impl == "cuda":
                torch.cuda.synchronize()
            return x
        '''
    assert _guarded(tmp_path, source, ["CUD105"]) == {6: True, 8: False, 10: False}


def test_no_fix_rewrites_the_branch_that_only_runs_on_cuda(tmp_path):
    source = textwrap.dedent('''\
        import torch


        def place(x, model):
            x = x.cuda() if torch.cuda.is_available() else x
            model = model if not torch.cuda.is_available() else model.cuda()
            return x, model.cuda()
        ''')
    _, fixed = run_on(tmp_path, source, codes=["CUD102"], fix=True)
    text = fixed.decode()
    assert "x = x.cuda() if torch.cuda.is_available() else x" in text
    assert "model = model if not torch.cuda.is_available() else model.cuda()" in text
    assert "return x, model.to(pick_device())" in text
    found = findings(tmp_path, source, codes=["CUD102"])
    assert {(f.location.row, f.guarded) for f in found} == {(5, True), (6, True), (7, False)}


def test_a_guard_holds_through_the_blocks_nested_under_it(tmp_path):
    """A finding under `if torch.cuda.is_available():` stays guarded with another `if`, an
    `else`, a loop, a `with`, a `try` or a nested function between it and the guard, at any
    depth: the guard is any enclosing one, not only the nearest `if`. An `if` that is no
    guard, with the same nesting inside it, guards nothing."""
    source = '''\
        import contextlib

        import torch


        def train(model, batches, args):
            if torch.cuda.is_available():
                if args.verbose:
                    torch.cuda.synchronize()
                else:
                    torch.cuda.synchronize()
                for batch in batches:
                    torch.cuda.synchronize()
                with contextlib.suppress(KeyError):
                    torch.cuda.synchronize()
                try:
                    torch.cuda.synchronize()
                except RuntimeError:
                    torch.cuda.synchronize()
                while args.waiting:
                    if args.again:
                        for batch in batches:
                            with contextlib.nullcontext():
                                torch.cuda.synchronize()

                def later():
                    torch.cuda.synchronize()
                return later
            if args.verbose:
                for batch in batches:
                    if args.again:
                        torch.cuda.synchronize()
            return model


        if not torch.cuda.is_available():
            print("no GPU")
        else:
            for step in range(3):
                if step:
                    torch.cuda.synchronize()
        '''
    guarded = {9: True, 11: True, 13: True, 15: True, 17: True, 19: True, 24: True,
               27: True, 32: False, 41: True}
    assert _guarded(tmp_path, source, ["CUD105"]) == guarded
    found = findings(tmp_path, textwrap.dedent(source), codes=["CUD105"])
    severities = {f.location.row: f.severity for f in found}
    # Guarded findings are one step lower than the same finding unguarded (row 32).
    assert {severities[row] for row, on in guarded.items() if on} == {Severity.WARNING}
    assert severities[32] is Severity.ERROR
    marks = {f.location.row: (" (guarded)", "dim") in headline(f) for f in found}
    assert marks == guarded

"""CUD101 f-strings, CUD103 in functions that consider MPS, CUD108 feature gates, CUD112 exits,
CUD106 fallback imports: realistic code, with what must stay silent."""

from __future__ import annotations

import textwrap

from tests.lint import codes_at, findings, run_on


def _codes(tmp_path, source: str, codes: list[str]) -> list[tuple[str | None, int, int]]:
    return codes_at(findings(tmp_path, textwrap.dedent(source), codes=codes))


def test_feature_gates_kept_or_passed_on(tmp_path):
    source = '''\
        import torch
        from torch.utils.data import DataLoader


        def configure(model, device, dev, impl, use_amp, dataset):
            """Turns on AMP when device == "cuda"."""
            scaler = torch.amp.GradScaler(enabled=use_amp and device == "cuda")
            amp_enabled = dev.type == "cuda"
            loader = DataLoader(dataset, pin_memory=device.type == "cuda")
            pin = device.type == "cuda"
            kernel = "fused" if impl == "cuda" else "eager"
            dtype = torch.float16 if device.type == "cuda" else torch.float32
            print("fast path:", device == "cuda")
            stats = {"cuda": 0.0, "on_gpu": device == "cpu"}  # not a CUDA test
            if device.type == "cuda" and use_amp:
                model = model.half()
            elif "cuda" in str(device):
                model = torch.compile(model)
            while device == "cuda" or dev.type == "cuda":
                break
            assert x.device.type == "cuda", "x.device must be cuda"
            return scaler, amp_enabled, loader, pin, kernel, dtype, stats
        '''
    assert _codes(tmp_path, source, ["CUD108"]) == [
        ("CUD108", 7, 55), ("CUD108", 8, 19), ("CUD108", 12, 30),
    ]


def test_one_feature_gate_finding_per_test(tmp_path):
    source = 'use_amp = device == "cuda" or device.type == "cuda" or dev == "cuda:0"\n'
    assert _codes(tmp_path, source, ["CUD108"]) == [("CUD108", 1, 11)]


def test_f_strings_are_hard_coded_devices(tmp_path):
    source = '''\
        import torch

        state = torch.load("ckpt.pt", map_location=f"cuda")
        x = torch.zeros(3, device=f"cuda:{0}")
        y = x.to(f"cuda:1")
        print(f"moved x to cuda:0")
        logger.info(f"cuda")
        run_name = f"cuda-baseline"
        '''
    assert _codes(tmp_path, source, ["CUD101"]) == [
        ("CUD101", 3, 44), ("CUD101", 4, 27), ("CUD101", 5, 10),
    ]
    _, fixed = run_on(tmp_path, textwrap.dedent(source), codes=["CUD101"], fix=True)
    text = fixed.decode()
    assert 'map_location=str(pick_device())' in text
    assert 'device=str(pick_device(0))' in text
    assert 'x.to(str(pick_device(1)))' in text
    assert 'print(f"moved x to cuda:0")' in text


def test_choices_in_functions_that_consider_mps(tmp_path):
    source = '''\
        import torch


        def get_device():
            if torch.backends.mps.is_available():
                return torch.device("mps")
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")


        def get_device_str(args):
            device = "cuda" if torch.cuda.is_available() else "cpu"
            if args.mps:
                device = "mps"
            return device


        def legacy():
            # considers only CUDA; the "mps" in this comment does not count
            return "cuda" if torch.cuda.is_available() else "cpu"
        '''
    assert _codes(tmp_path, source, ["CUD103"]) == [("CUD103", 19, 12)]


# Functions that check for MPS: a choice is left alone only where its function gives the
# same name (as written: `self.device` is not `device`) or its return value an MPS branch.
MPS_BRANCHES = """\
    import torch


    def configure():
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        amp_dtype = torch.float16
        if torch.backends.mps.is_available():
            amp_dtype = torch.bfloat16
        return device, amp_dtype


    def report():
        device = "cuda" if torch.cuda.is_available() else "cpu"
        if torch.backends.mps.is_available():
            print("MPS available but not used")
        return device


    class Trainer:
        def setup(self):
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            device = self.device
            if torch.backends.mps.is_available():
                device = torch.device("mps")
            return device

        def setup_mps(self):
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            if torch.backends.mps.is_available():
                self.device = torch.device("mps")


    def returned():
        if torch.backends.mps.is_available():
            torch.mps.empty_cache()
        return "cuda" if torch.cuda.is_available() else "cpu"


    def overridden_after(args):
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if torch.backends.mps.is_available() and not args.no_mps:
            device = torch.device("mps")
        return device


    def chosen_under_the_check():
        if torch.backends.mps.is_available():
            device = "mps"
        else:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        return device


    def elif_chain(args):
        device = "cuda" if torch.cuda.is_available() else "cpu"
        if args.cpu:
            device = "cpu"
        elif torch.backends.mps.is_available():
            device = args.mps_device
        return device


    def conditional_override():
        device = "cuda" if torch.cuda.is_available() else "cpu"
        device = "mps" if torch.backends.mps.is_available() else device
        return device


    def through_a_flag(args):
        has_mps = torch.backends.mps.is_available()
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if has_mps and args.accelerate:
            device = torch.device(args.mps_device)
        return device
    """


def test_a_check_for_mps_that_gives_the_chosen_name_no_branch(tmp_path):
    """`configure` checks MPS for its AMP dtype only, `report` only logs, `setup` gives a
    local `device` (not `self.device`) MPS, `returned` returns nothing under its check: each
    choice is reported. Every function below them gives the chosen name an MPS branch."""
    source = textwrap.dedent(MPS_BRANCHES)
    assert _codes(tmp_path, source, ["CUD103"]) == [
        ("CUD103", 5, 27), ("CUD103", 13, 14), ("CUD103", 21, 36), ("CUD103", 36, 12),
    ]


def test_the_fix_of_a_choice_beside_another_mps_check_keeps_cuda(tmp_path, monkeypatch):
    """The rewritten `configure` gives what the original gave on a CUDA machine (CUDA, the
    float16 AMP dtype), and MPS on a Mac, where the original gave the CPU."""
    import torch

    from cudalint import device as helper

    source = textwrap.dedent(MPS_BRANCHES).split("\n\n\nclass Trainer")[0] + "\n"
    _, fixed = run_on(tmp_path, source, codes=["CUD103"], fix=True)
    text = fixed.decode()
    assert "    device = pick_device()\n" in text
    assert "from cudalint.device import pick_device" in text
    original: dict[str, object] = {}
    exec(compile(source, "original.py", "exec"), original)
    rewritten: dict[str, object] = {}
    exec(compile(text, "fixed.py", "exec"), rewritten)
    monkeypatch.delenv("CUDALINT_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(helper, "_cuda_available", lambda: True)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    on_cuda = original["configure"]()  # type: ignore[operator]
    assert on_cuda == (torch.device("cuda"), torch.float16)
    assert rewritten["configure"]() == on_cuda  # type: ignore[operator]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(helper, "_cuda_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: True)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert original["configure"]() == (torch.device("cpu"), torch.bfloat16)  # type: ignore[operator]
    assert rewritten["configure"]() == (torch.device("mps"), torch.bfloat16)  # type: ignore[operator]


def test_module_level_choices_and_mps_spelled_only_through_escapes(tmp_path):
    """A module that never spells "mps" can still assign it (an escape writes a letter): the
    choice it overrides is not reported; one in a module without either is."""
    overridden = '''\
        import torch

        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
        if __name__ == "__main__" and torch.backends.cuda.is_built() is False:
            DEVICE = "\\x6dps"
        '''
    assert _codes(tmp_path, overridden, ["CUD103"]) == []
    # a backslash-newline inside the string (dedented first: the string's second line has no
    # indentation of its own)
    continued = textwrap.dedent(overridden).replace('"\\x6dps"', '"m\\\nps"')
    assert _codes(tmp_path, continued, ["CUD103"]) == []
    plain = overridden.replace('"\\x6dps"', '"cpu"')
    assert _codes(tmp_path, plain, ["CUD103"]) == [("CUD103", 3, 10)]


def test_hard_requirements_that_exit(tmp_path):
    source = '''\
        import os
        import sys

        import pytest
        import torch


        def main():
            if torch.cuda.is_available():
                device = torch.device("cuda")
            else:
                print("This code does not support training without GPU")
                sys.exit(1)
            return device


        def worker():
            if not torch.cuda.is_available():
                print("a GPU is required")
                os._exit(2)


        def test_kernel():
            if not torch.cuda.is_available():
                pytest.skip("needs CUDA")


        def cli(args):
            if not args.cuda:
                sys.exit("pass --cuda")
            if not torch.cuda.is_available():
                print("no GPU: running on the CPU")
        '''
    assert _codes(tmp_path, source, ["CUD112"]) == [("CUD112", 9, 5), ("CUD112", 18, 5)]


def test_torch_cuda_amp_as_a_fallback_import(tmp_path):
    source = '''\
        import torch

        try:
            from torch.amp import custom_bwd, custom_fwd
        except ImportError:
            from torch.cuda.amp import custom_bwd, custom_fwd

        if hasattr(torch.amp, "GradScaler"):
            GradScaler = torch.amp.GradScaler
        else:
            from torch.cuda.amp import GradScaler as GradScaler


        @custom_fwd
        def forward(ctx, x):
            return x


        scaler = GradScaler()
        '''
    assert _codes(tmp_path, source, ["CUD106"]) == [
        ("CUD106", 6, 32), ("CUD106", 6, 44), ("CUD106", 11, 32),
    ]


# A trainer's device set-up with every form of a CUDA-or-CPU choice (CUD103), and the
# choices CUD103 leaves alone.
CHOICES = '''\
    import torch


    def pick(args):
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        name = "cuda" if torch.cuda.is_available() else "cpu"
        if torch.cuda.is_available():
            dev = torch.device("cuda:1")
        else:
            dev = torch.device("cpu")
        other = "cpu" if not torch.cuda.is_available() else "cuda"
        wanted = "cuda" if args.cuda and torch.cuda.is_available() else "cpu"
        print("cuda" if torch.cuda.is_available() else "cpu")
        label = "gpu" if torch.cuda.is_available() else "cpu"
        return device, name, dev, other, wanted, label
    '''


def test_every_form_of_the_cuda_or_cpu_choice(tmp_path):
    source = textwrap.dedent(CHOICES)
    assert codes_at(findings(tmp_path, source, codes=["CUD103"])) == [
        ("CUD103", 5, 27), ("CUD103", 6, 12), ("CUD103", 7, 5), ("CUD103", 11, 13),
        ("CUD103", 12, 14)]


def test_the_choice_fix_keeps_each_type_and_leaves_a_users_flag(tmp_path):
    _, fixed = run_on(tmp_path, textwrap.dedent(CHOICES), codes=["CUD103"], fix=True)
    assert fixed.decode().splitlines()[4:13] == [
        "def pick(args):",
        "    device = pick_device()",  # the torch.device form stays a torch.device
        "    name = str(pick_device())",  # a str stays a str
        "    dev = pick_device(1)",  # the if/else form, with its index
        "    other = str(pick_device())",  # the test written the other way round
        # a user's flag besides the probe: pick_device() would ignore it, so no fix
        '    wanted = "cuda" if args.cuda and torch.cuda.is_available() else "cpu"',
        '    print("cuda" if torch.cuda.is_available() else "cpu")',
        '    label = "gpu" if torch.cuda.is_available() else "cpu"',
        "    return device, name, dev, other, wanted, label",
    ]


# A choice whose test is no CUDA check (a process group, a config flag): the bare "cuda" it
# gives a device use is CUD101's (issue 41).
SETTING_CHOICES = '''\
    import torch


    def build(model, batch, cpu_group=None, cfg=None):
        device = "cuda" if cpu_group is None else "cpu"
        model.to(device)
        x = batch.to("cuda" if cfg.fp16 else "cpu", non_blocking=True)
        target = "cuda" if cfg.remote else "cpu"
        y = x.to(target)
        d = torch.device("cuda" if cfg.gpu_ids else "cpu")
        print("cuda" if cfg.fp16 else "cpu")
        logger.info(f"running on {'cuda' if cfg.fp16 else 'cpu'}")
        name = "cuda" if cfg.fp16 else "cpu"
        stats = {"cuda" if cfg.fp16 else "cpu": 0.0}
        other = "cuda" if torch.cuda.is_available() else "mps"
        device_name = "cuda" if not cfg.device else cfg.device  # a default, not a choice
        return x, y, d, name, stats, other, device_name
    '''


def test_a_choice_whose_test_is_no_probe_reports_the_cuda_it_gives_a_device(tmp_path):
    source = textwrap.dedent(SETTING_CHOICES)
    found = findings(tmp_path, source, codes=["CUD101", "CUD103"])
    assert codes_at(found) == [("CUD101", 5, 14), ("CUD101", 7, 18), ("CUD101", 8, 14),
                               ("CUD101", 10, 22)]
    _, fixed = run_on(tmp_path, source, codes=["CUD101"], fix=True)
    lines = fixed.decode().splitlines()
    assert lines[5] == '    device = str(pick_device()) if cpu_group is None else "cpu"'
    assert lines[7] == ('    x = batch.to(str(pick_device()) if cfg.fp16 else "cpu", '
                        'non_blocking=True)')
    assert lines[10] == '    d = torch.device(str(pick_device()) if cfg.gpu_ids else "cpu")'

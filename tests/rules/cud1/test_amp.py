"""CUD106: a CUDA-only mixed-precision training script, fixed, trains with AMP on this CPU."""

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

CUD1 = ["CUD101", "CUD102", "CUD103", "CUD104", "CUD105", "CUD106", "CUD107", "CUD109",
        "CUD110"]

TRAIN = textwrap.dedent('''\
    """A few mixed-precision training steps, written for an NVIDIA GPU."""
    import torch
    from torch import nn
    from torch.cuda.amp import GradScaler, autocast


    class Square(torch.autograd.Function):
        @staticmethod
        @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @torch.cuda.amp.custom_bwd
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad


    def main():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        scaler = GradScaler(init_scale=2.0**10)
        x = torch.randn(64, 8, device="cuda")
        y = (x[:, 0] > 0).long()
        losses = []
        for _ in range(30):
            optimizer.zero_grad()
            with autocast(dtype=torch.bfloat16):
                hidden = model[1](model[0](x))
                squared = Square.apply(hidden)
                loss = nn.functional.cross_entropy(model[2](squared).float(), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            losses.append(loss.item())
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16), torch.no_grad():
            logits = model(x)
        print(f"autocast dtype: {hidden.dtype}")
        print(f"custom_fwd dtype: {squared.dtype}")
        print(f"eval dtype: {logits.dtype}")
        print(f"scaler enabled: {scaler.is_enabled()}")
        print(f"first loss: {losses[0]:.4f}")
        print(f"last loss: {losses[-1]:.4f}")


    if __name__ == "__main__":
        main()
''')


def _run(script: Path, warm: WarmPython) -> subprocess.CompletedProcess[str]:
    """`python [str(script)]` forked from a process that imported torch once."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("CUDALINT_DEVICE", None)
    return warm.run([str(script)], cwd=script.parent, env=env)


def test_amp_findings(tmp_path):
    found = findings(tmp_path, TRAIN, name="train.py", codes=["CUD106"])
    assert codes_at(found) == [
        ("CUD106", 9, 6),  # custom_fwd(cast_inputs=...)
        ("CUD106", 15, 6),  # bare custom_bwd
        ("CUD106", 25, 14),  # GradScaler imported from torch.cuda.amp
        ("CUD106", 31, 14),  # autocast imported from torch.cuda.amp
        ("CUD106", 39, 25),  # device_type="cuda": at the keyword
    ]
    assert all(f.severity is Severity.WARNING for f in found)
    assert all(f.fix is not None and f.fix.applicability is Applicability.SAFE for f in found)


@pytest.mark.skipif(torch.cuda.is_available(), reason="shows what happens without CUDA")
def test_fixed_amp_training_runs_on_cpu(tmp_path, warm_python):
    script = tmp_path / "train.py"
    report, after = run_on(tmp_path, TRAIN, name="train.py", codes=CUD1, fix=True)
    fixed = after.decode()
    # The fixes rewrote every use of the torch.cuda.amp names, so their import went too.
    assert [line for line in fixed.splitlines() if "torch.cuda.amp" in line] == []
    assert "@torch.amp.custom_fwd(device_type=pick_device().type, cast_inputs=torch.float32)" \
        in fixed
    assert "@torch.amp.custom_bwd(device_type=pick_device().type)" in fixed
    assert "scaler = torch.amp.GradScaler(pick_device().type, init_scale=2.0**10)" in fixed
    assert "with torch.autocast(pick_device().type, dtype=torch.bfloat16):" in fixed
    assert 'torch.autocast(device_type=pick_device().type, dtype=torch.bfloat16)' in fixed
    assert report.findings == []

    result = _run(script, warm_python)
    assert result.returncode == 0, result.stderr[-2000:]
    out = dict(line.split(": ", 1) for line in result.stdout.splitlines())
    # On this CPU the fixed script really runs mixed precision (torch.cuda.amp would have
    # warned, disabled itself and run float32).
    assert out["autocast dtype"] == "torch.bfloat16"
    assert out["custom_fwd dtype"] == "torch.float32"  # cast_inputs still applies
    assert out["eval dtype"] == "torch.bfloat16"
    assert out["scaler enabled"] == "True"
    assert float(out["last loss"]) < float(out["first loss"])

    _, again = run_on(tmp_path, after, name="train.py", codes=CUD1, fix=True)
    assert again == after


SAFE, UNSAFE = Applicability.SAFE, Applicability.UNSAFE
AMP_SOURCE = ("import torch\ns = torch.cuda.amp.GradScaler()\n"
              "f = torch.cuda.amp.custom_fwd(fn)\nwith torch.cuda.amp.autocast():\n    pass\n"
              "with torch.autocast('cuda', enabled=False):\n    pass\n")


@pytest.mark.parametrize(
    ("target", "scaler", "custom_fwd", "autocast"),
    [
        ("2.2", None, None, UNSAFE),  # no torch.amp.GradScaler, no torch.amp.custom_fwd yet
        ("2.3", UNSAFE, None, UNSAFE),  # GradScaler: MPS cannot unscale before 2.8
        ("2.4", UNSAFE, UNSAFE, UNSAFE),  # no autocast on MPS before 2.5: raises on 'mps'
        ("2.6", UNSAFE, SAFE, SAFE),
        ("2.8", SAFE, SAFE, SAFE),
    ],
)
def test_fixes_follow_the_target_torch(tmp_path, target, scaler, custom_fwd, autocast):
    config = Config(root=tmp_path, target_torch=target)
    report, _ = run_on(tmp_path, AMP_SOURCE, codes=["CUD106"], config=config)
    fixes = {f.location.row: f.fix.applicability if f.fix else None for f in report.findings}
    assert fixes == {2: scaler, 3: custom_fwd, 4: autocast, 6: autocast}


def test_with_no_torch_floor_stated_every_fix_that_needs_a_torch_is_unsafe(tmp_path):
    """The project names no torch with a lower bound and sets no target-torch: the Mac's
    torch may predate MPS autocast (`torch>=2.0` projects raise at import there)."""
    (tmp_path / "requirements.txt").write_text("torch\nnumpy>=1.24\n")
    report, _ = run_on(tmp_path, AMP_SOURCE, codes=["CUD106"], config=Config(root=tmp_path))
    fixes = {f.location.row: f.fix.applicability for f in report.findings if f.fix}
    assert fixes == {2: UNSAFE, 3: UNSAFE, 4: UNSAFE, 6: UNSAFE}
    (tmp_path / "requirements.txt").write_text("torch>=2.6\n")
    report, _ = run_on(tmp_path, AMP_SOURCE, codes=["CUD106"], config=Config(root=tmp_path))
    assert {f.location.row: f.fix.applicability for f in report.findings if f.fix} \
        == {2: UNSAFE, 3: SAFE, 4: SAFE, 6: SAFE}


def test_unfixable_and_silent_forms(tmp_path):
    source = textwrap.dedent('''\
        import torch
        from contextlib import nullcontext

        def context(amp, device):
            """Wraps torch.cuda.amp.autocast() for the caller."""
            print("autocast on cuda")
            if device.type == "cuda":
                return torch.autocast(device.type)
            return torch.cuda.amp.autocast if amp else nullcontext
        ''')
    found = findings(tmp_path, source, codes=["CUD106"])
    assert codes_at(found) == [("CUD106", 9, 12)]
    assert found[0].fix is None


def test_an_imported_name_is_reported_at_its_uses_and_the_import_only_when_unused(tmp_path):
    """Issue 41 (RULES.md's CUD106): `from torch.cuda.amp import autocast, GradScaler` gives a
    finding at each use; a name no code uses is reported at the import (prose, a docstring or
    `torch.autocast`, naming it, is no use)."""
    source = (
        "import torch\n"
        "from torch.cuda.amp import GradScaler, autocast, custom_fwd\n"
        "\n"
        "\n"
        "def train_step(model, batch, optimizer, scaler):\n"
        '    """One step under autocast (see custom_fwd in the docs)."""\n'
        "    with torch.autocast('cpu'):  # not the imported autocast\n"
        "        loss = model(batch)\n"
        "    scaler.scale(loss).backward()\n"
        "    return loss\n"
        "\n"
        "\n"
        "def make_scaler():\n"
        "    return GradScaler(enabled=True)\n"
    )
    found = findings(tmp_path, source, codes=["CUD106"])
    # autocast and custom_fwd are only imported; GradScaler is reported where it is used
    assert codes_at(found) == [("CUD106", 2, 40), ("CUD106", 2, 50), ("CUD106", 14, 12)]
    used = "\nwith autocast():\n    pass\n@custom_fwd\ndef f(ctx, x):\n    return x\n"
    found = findings(tmp_path, source + used, codes=["CUD106"])
    assert codes_at(found) == [("CUD106", 14, 12), ("CUD106", 16, 6), ("CUD106", 18, 2)]


def test_an_unused_import_under_an_import_error_fallback_is_guarded(tmp_path):
    source = ("try:\n    from torch.cuda.amp import autocast\n"
              "except ImportError:\n    autocast = None\n")
    (found,) = findings(tmp_path, source, codes=["CUD106"])
    assert (found.location.row, found.guarded) == (2, True)

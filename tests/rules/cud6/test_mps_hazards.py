"""CUD601, CUD602 and CUD603 on realistic modules."""

from __future__ import annotations

from cudalint.config import Config
from cudalint.finding import Severity
from tests.lint import codes_at, findings, run_on

SCIENCE = '''\
"""Spectra of random matrices, on the GPU when there is one."""
import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def spectrum(n: int = 64):
    a = np.random.randn(n, n)
    m = torch.from_numpy(a).to(device)
    eig = torch.linalg.eig(m)
    vals = torch.linalg.eigvals(m)
    sol = torch.linalg.solve(m, torch.ones(n, device=device))
    prod = torch.matmul(m, m)
    ref = torch.zeros(n, dtype=torch.float64)
    ref_cpu = torch.zeros(n, dtype=torch.float64, device="cpu")
    cpu_eig = torch.linalg.eig(m.cpu())
    grid = np.linspace(0.0, 1.0, n)
    g = torch.tensor(grid, dtype=torch.float32, device=device)
    h = torch.as_tensor(grid.astype(np.float32)).to(device)
    print("torch.float64 on the device is not supported; torch.linalg.eig neither")
    return eig, vals, sol, prod, ref, ref_cpu, cpu_eig, g, h


def precise(x, device):
    x = x.double().to(device)
    w = torch.ones(3, dtype=torch.double, device=device)
    return x, w
'''


def test_scientific_script(tmp_path):
    found = findings(tmp_path, SCIENCE, name="spectra.py", codes=["CUD601", "CUD602", "CUD603"])
    assert codes_at(found) == [
        ("CUD601", 10, 9),   # torch.from_numpy(<float64 array>).to(device)
        ("CUD601", 26, 11),  # .double() then .to(device)
        ("CUD601", 27, 23),  # dtype=torch.double with a device
        ("CUD602", 11, 11),  # torch.linalg.eig
        ("CUD602", 12, 12),  # torch.linalg.eigvals: composite, decomposes into linalg_eig
    ]
    messages = {(f.code, f.location.row): f.message for f in found}
    assert "float32" in messages[("CUD601", 10)] and "numpy" in messages[("CUD601", 10)]
    assert "torch.float32" in messages[("CUD601", 27)]
    assert "aten::linalg_eig" in messages[("CUD602", 12)]
    assert "PYTORCH_ENABLE_MPS_FALLBACK=1" in messages[("CUD602", 12)]
    assert all(f.severity is Severity.ERROR for f in found)


def test_ops_with_mps_kernels_stay_silent(tmp_path):
    source = (
        "import torch\nimport torch.nn as nn\n"
        "x = torch.linalg.solve(A, b)\ny = torch.matmul(a, b)\nlayer = nn.Linear(3, 4)\n"
        "z = torch.linalg.eigvals(A)\n"
    )
    found = findings(tmp_path, source, codes=["CUD602"])
    assert codes_at(found) == [("CUD602", 6, 5)]


def test_coverage_follows_target_torch(tmp_path):
    """torch 2.14 added an MPS kernel for _ctc_loss; a version without its own table says so."""
    source = "import torch.nn as nn\nloss = nn.CTCLoss()\n"
    assert len(findings(tmp_path, source, codes=["CUD602"])) == 1
    newer = run_on(tmp_path, source, codes=["CUD602"],
                   config=Config(root=tmp_path, target_torch="2.14"))[0]
    assert newer.findings == []
    older = run_on(tmp_path, "import torch\nm = torch.mode(x)\n", codes=["CUD602"],
                   config=Config(root=tmp_path, target_torch="2.9"))[0]
    (finding,) = older.findings
    assert "nearest table to target 2.9" in finding.message


def test_fallback_variable(tmp_path):
    before = ("import os\nos.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'\n"
              "import torch\nm = torch.mode(x)\nu, s, v = torch.linalg.svd(a)\n")
    found = sorted(findings(tmp_path, before, codes=["CUD602"]), key=lambda f: f.location)
    assert [f.severity for f in found] == [Severity.WARNING, Severity.WARNING]
    assert "always runs on the CPU" in found[1].message  # linalg_svd falls back regardless
    after = "import torch\nimport os\nos.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'\n" \
            "m = torch.mode(x)\n"
    (late,) = findings(tmp_path, after, codes=["CUD602"])
    assert late.severity is Severity.ERROR and "too late" in late.message


def test_ambiguous_methods(tmp_path):
    source = '''\
import pandas as pd
import torch
from scipy import stats

def summarize(df, values, queue, t):
    top = df["label"].mode()
    s = stats.mode(values)
    queue.put(top)
    picked = values.take([0, 1])
    mode = open("f").mode
    m, idx = t.mode(dim=1)
    scores = torch.randn(8, 3)
    best = scores.mode()
    return top, s, picked, mode, m, best, t.heaviside(values)
'''
    found = findings(tmp_path, source, codes=["CUD602"])
    assert codes_at(found) == [("CUD602", 11, 16), ("CUD602", 13, 19), ("CUD602", 14, 45)]


PIPELINE = '''\
import torch
from torch.utils.data import DataLoader

PIN = torch.cuda.is_available()


def loaders(train, test, use_cuda):
    train_kwargs = {"batch_size": 64}
    test_kwargs = {"batch_size": 1000, "pin_memory": False}
    if use_cuda:
        cuda_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
        train_kwargs.update(cuda_kwargs)
    options = {"pin_memory": True}
    print("pin_memory=True speeds up host-to-device copies", options)
    a = DataLoader(train, **train_kwargs)
    b = DataLoader(test, **test_kwargs)
    c = DataLoader(train, pin_memory=PIN)
    d = DataLoader(train, pin_memory=use_cuda)
    e = DataLoader(train, pin_memory=torch.cuda.is_available())
    f = DataLoader(train, batch_size=8, pin_memory=True)
    buffer = torch.empty(1024, pin_memory=True)
    return a, b, c, d, e, f, buffer


def to_device(batch, device):
    return batch.pin_memory().to(device, non_blocking=True)
'''


def test_pinned_memory(tmp_path):
    found = findings(tmp_path, PIPELINE, name="data.py", codes=["CUD603"])
    assert codes_at(found) == [
        ("CUD603", 11, 42),  # through cuda_kwargs -> train_kwargs.update -> **train_kwargs
        ("CUD603", 20, 41),  # DataLoader(pin_memory=True)
        ("CUD603", 21, 32),  # torch.empty(pin_memory=True) raises without an accelerator
        ("CUD603", 26, 18),  # .pin_memory()
    ]
    by_row = {f.location.row: f for f in found}
    # `if use_cuda:` tests a parameter: the caller's switch, no guard
    assert not by_row[11].guarded and by_row[11].severity is Severity.INFO
    assert by_row[20].severity is Severity.INFO
    assert by_row[21].severity is Severity.WARNING
    assert by_row[26].severity is Severity.WARNING

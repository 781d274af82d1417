"""CUD701 and CUD702 on realistic distributed training scripts."""

from __future__ import annotations

import textwrap

from cudalint.config import Config
from cudalint.finding import Severity
from tests.lint import codes_at, findings, run_on

DDP_SCRIPT = '''\
"""Data-parallel training over NCCL, launched with torchrun."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    parser.add_argument("--epochs", type=int, default=10)
    return parser.parse_args()


def main(dataset):
    args = parse_args()
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group(backend=args.backend)
    print(f"initialised the nccl process group on rank {local_rank}")
    timeouts = {"nccl": 600, "gloo": 60}
    if args.backend == "nccl":
        os.environ["NCCL_DEBUG"] = "WARN"
    model = nn.Linear(10, 10).to(local_rank)
    ddp = DDP(model, device_ids=[local_rank], output_device=local_rank)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler, num_workers=4, pin_memory=True)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = ddp(x.to(local_rank, non_blocking=True)).sum()
            loss.backward()
    return timeouts
'''


def test_ddp_script(tmp_path):
    found = findings(tmp_path, DDP_SCRIPT, name="train.py",
                     codes=["CUD601", "CUD602", "CUD603", "CUD701", "CUD702"])
    assert codes_at(found) == [
        ("CUD603", 31, 81),  # pin_memory=True
        ("CUD701", 15, 38),  # default=, the argparse default (not the choices)
        ("CUD702", 29, 22),  # device_ids=
        ("CUD702", 29, 47),  # output_device=
    ]
    by_code = {f.code: f for f in found}
    assert by_code["CUD603"].severity is Severity.INFO
    assert by_code["CUD701"].severity is Severity.ERROR
    assert by_code["CUD702"].severity is Severity.ERROR


def test_ddp_script_unsafe_fix(tmp_path):
    _, after = run_on(tmp_path, DDP_SCRIPT, name="train.py", codes=["CUD701"], unsafe=True)
    text = after.decode()
    assert ('parser.add_argument("--backend", default=dist.get_default_backend_for_device('
            'pick_device()), choices=["nccl", "gloo"])') in text
    assert "from cudalint.device import pick_device\n" in text
    assert 'timeouts = {"nccl": 600' in text and 'if args.backend == "nccl":' in text
    # A plain --fix leaves it: the fix is unsafe.
    _, same = run_on(tmp_path, DDP_SCRIPT, name="train.py", codes=["CUD701"], fix=True)
    assert same.decode() == DDP_SCRIPT


def test_no_fix_before_torch_2_8(tmp_path):
    """`get_default_backend_for_device` has no MPS entry before 2.8: no fix, gloo named."""
    config = Config(root=tmp_path, target_torch="2.6")
    report, after = run_on(tmp_path, DDP_SCRIPT, name="train.py", codes=["CUD701"],
                           unsafe=True, config=config)
    assert after.decode() == DDP_SCRIPT
    (finding,) = report.findings
    assert finding.fix is None
    assert '"gloo"' in finding.message


LAUNCHER = '''\
import os

import torch
import torch.distributed as dist
from torch import nn

BACKEND = "nccl"


def setup(rank, world_size):
    backend = os.environ.get("DIST_BACKEND", "nccl")
    dist.init_process_group(backend, rank=rank, world_size=world_size)
    group = dist.new_group(ranks=[0, 1], backend=BACKEND)
    gloo = dist.new_group(ranks=[0, 1], backend="gloo")
    if dist.get_backend() == "nccl":
        print("nccl")
    return group, gloo


def wrap(model):
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    return torch.nn.parallel.data_parallel(model, torch.ones(1))


def portable(rank):
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return nn.parallel.DistributedDataParallel(nn.Linear(2, 2), device_ids=None)
'''


def test_launcher(tmp_path):
    found = findings(tmp_path, LAUNCHER, name="launch.py", codes=["CUD701", "CUD702"])
    assert codes_at(found) == [
        ("CUD701", 7, 11),   # BACKEND = "nccl", used by new_group
        ("CUD701", 11, 46),  # the os.environ.get default
        ("CUD701", 27, 29),  # the CUDA branch of a conditional: guarded
        ("CUD702", 22, 17),  # nn.DataParallel under device_count() > 1: guarded
        ("CUD702", 23, 12),  # data_parallel(): raises off CUDA
    ]
    guarded = {(f.code, f.location.row): f for f in found}
    assert guarded[("CUD701", 27)].guarded and guarded[("CUD701", 27)].fix is None
    assert guarded[("CUD701", 27)].severity is Severity.WARNING
    assert guarded[("CUD702", 22)].guarded
    assert guarded[("CUD702", 22)].severity is Severity.INFO
    assert guarded[("CUD702", 23)].severity is Severity.ERROR


def test_device_ids_through_kwargs_dicts(tmp_path):
    source = textwrap.dedent('''\
        from torch.nn.parallel import DistributedDataParallel as DDP


        def wrap(model, args):
            kwargs = {"find_unused_parameters": args.find_unused}
            if args.static_graph:
                kwargs["static_graph"] = True
            kwargs["device_ids"] = [args.local_rank]
            kwargs["output_device"] = args.local_rank
            print("DDP kwargs: device_ids", kwargs)
            return DDP(model, **kwargs)


        def wrap_cpu(model):
            kwargs = {"find_unused_parameters": True, "device_ids": None}
            return DDP(model, **kwargs)


        def wrap_dict(model, rank):
            return DDP(model, **dict(device_ids=[rank], bucket_cap_mb=25))
        ''')
    found = findings(tmp_path, source, codes=["CUD702"])
    assert codes_at(found) == [("CUD702", 8, 5), ("CUD702", 9, 5), ("CUD702", 20, 30)]


INIT = '''\
import torch
import torch.distributed as dist


def setup(rank, world_size):
    dist.init_process_group(backend="nccl", init_method="env://")
    group = dist.new_group(ranks=[0, 1], backend=dist.Backend.NCCL)
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    backend = "nccl"
    dist.init_process_group(backend=backend)
    dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    return group
'''


def test_a_backend_keyword_is_reported_at_the_keyword(tmp_path):
    """`backend="nccl"` is reported at `backend`, as CUD702 reports `device_ids=`; a
    positional "nccl", a variable's value and a conditional's branch where the literal is.
    The fix still replaces the literal alone."""
    found = findings(tmp_path, INIT, codes=["CUD701"])
    assert codes_at(found) == [
        ("CUD701", 6, 29),   # backend="nccl"
        ("CUD701", 7, 42),   # backend=dist.Backend.NCCL
        ("CUD701", 8, 29),   # "nccl", positional
        ("CUD701", 9, 15),   # backend = "nccl", the variable the call reads
        ("CUD701", 11, 37),  # the branch that needs CUDA: guarded
    ]
    _, after = run_on(tmp_path, INIT, codes=["CUD701"], unsafe=True)
    text = after.decode()
    assert ('dist.init_process_group(backend=dist.get_default_backend_for_device('
            'pick_device()), init_method="env://")') in text
    assert ('new_group(ranks=[0, 1], backend=dist.get_default_backend_for_device('
            'pick_device()))') in text


def test_nccl_through_a_kwargs_dict(tmp_path):
    source = textwrap.dedent('''\
        import torch.distributed as dist

        DIST = {"backend": "nccl", "init_method": "env://"}


        def setup(rank, world_size):
            cfg = {"backend": "nccl", "rank": rank, "world_size": world_size}
            dist.init_process_group(**cfg)
            dist.init_process_group(**DIST, rank=rank, world_size=world_size)


        def setup_items(rank):
            kwargs = {"rank": rank}
            kwargs["backend"] = "nccl"
            dist.init_process_group(**kwargs)


        def cpu_setup(rank):
            opts = {"backend": "gloo", "rank": rank}
            timeouts = {"nccl": 600, "gloo": 60}
            dist.init_process_group(**opts)
            return timeouts
        ''')
    found = findings(tmp_path, source, codes=["CUD701"])
    assert codes_at(found) == [("CUD701", 3, 20), ("CUD701", 7, 23), ("CUD701", 14, 25)]
    _, after = run_on(tmp_path, source, codes=["CUD701"], unsafe=True)
    assert after.decode().count("get_default_backend_for_device(pick_device())") == 3


def test_nccl_in_a_dict_call_passed_as_kwargs_is_one_finding(tmp_path):
    """`dict(backend="nccl")` is reported at its keyword, as any call's backend keyword is;
    passing it on with `**` does not report the same "nccl" a second time."""
    source = textwrap.dedent('''\
        import torch.distributed as dist


        def setup(rank):
            opts = dict(backend="nccl", rank=rank)
            dist.init_process_group(**opts)
        ''')
    assert codes_at(findings(tmp_path, source, codes=["CUD701"])) == [("CUD701", 5, 17)]

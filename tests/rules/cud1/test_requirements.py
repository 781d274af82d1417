"""CUD112: hard CUDA requirements written as comparisons with True/False, an elif that raises
where the other branch is the CUDA one; and the device dispatch whose `else` rejects unknown
types, which is no requirement."""

from __future__ import annotations

import textwrap

from tests.lint import codes_at, findings

SOURCE = '''\
    import torch


    def forward(x):
        assert(x.is_cuda == True)
        assert x.is_cuda is True, "CUDA only"
        assert x.is_cuda == False, "expects a CPU tensor"
        assert x.is_cuda is not False
        return x


    def backward(ctx, grad):
        if grad.is_cuda:
            return grad * 2
        elif grad.is_cuda == False:
            raise NotImplementedError()


    def attention(q, device):
        if device.type == "cpu":
            return q.softmax(-1)
        elif device.type == "cuda":
            return q.softmax(-1).half()
        else:
            raise ValueError(f"unsupported device {device}")


    def kernel(q, device):
        if device.type == "cuda":
            return q.half()
        else:
            raise ValueError("only CUDA is supported")


    def picked(q, device):
        if device in ("cpu", "mps"):
            return q
        elif device == "cuda":
            return q.half()
        raise ValueError(device)


    def main():
        if torch.cuda.is_available() == False:
            print("needs a GPU")
            raise SystemExit(1)
    '''


def test_requirements_written_as_comparisons(tmp_path):
    found = findings(tmp_path, textwrap.dedent(SOURCE), codes=["CUD112"])
    assert codes_at(found) == [
        ("CUD112", 5, 5), ("CUD112", 6, 5), ("CUD112", 8, 5),  # == True, is True, is not False
        ("CUD112", 15, 5),  # the elif `== False` that raises
        ("CUD112", 29, 5),  # CUDA or raise: a requirement
        ("CUD112", 44, 5),  # is_available() == False, then exit
    ]  # the dispatches over cpu/cuda (20, 37) are silent
    assert not any(f.guarded for f in found)

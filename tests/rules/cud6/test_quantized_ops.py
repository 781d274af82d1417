"""CUD602 reports an op only where its tensor can reach MPS: not on a tensor a test around the
call says is quantized (quantized tensors live on the CPU and CUDA only) or on the CPU."""

from __future__ import annotations

import textwrap

from tests.lint import codes_at, findings

SOURCE = '''\
    import torch


    def to_float(x, y):
        if x.is_quantized:
            x = x.dequantize()
        z = y.dequantize() if y.is_quantized else y
        w = x.is_quantized and x.dequantize()
        if not y.is_quantized:
            return y
        else:
            y = y.dequantize()
        if x.is_cpu:
            values = torch.linalg.eig(x)
        if y.is_quantized:
            return x.dequantize()  # another tensor
        return torch.linalg.eig(x)
    '''


def test_ops_on_tensors_that_cannot_reach_mps_are_silent(tmp_path):
    found = findings(tmp_path, textwrap.dedent(SOURCE), codes=["CUD602"])
    assert codes_at(found) == [("CUD602", 16, 18), ("CUD602", 17, 12)]

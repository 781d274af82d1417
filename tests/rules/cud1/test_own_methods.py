"""CUD102 on `self.cuda()` in classes with their own `cuda`/`to` (issue 41): a TensorRT engine
wrapper that is no `nn.Module` calls its own method; a module overriding `to` keeps its
finding, without the fix that would make `to` call itself."""

from __future__ import annotations

import textwrap

from tests.lint import codes_at, findings, run_on

ENGINE = textwrap.dedent('''\
    import tensorrt as trt
    import torch
    import torch.nn as nn


    class TRTEngine:
        """Runs a serialized TensorRT engine; `cuda()` only marks where its bindings live."""

        def __init__(self, path):
            self.path = path
            self.on_gpu = False
            self.bindings = {}

        def cuda(self):
            self.on_gpu = True
            return self

        def to(self, device):
            if str(device).startswith("cuda"):
                return self.cuda()
            return self

        def feed(self, name, tensor):
            self.bindings[name] = tensor.cuda()


    class Backbone(nn.Module):
        def cuda(self, device=None):
            return super().cuda(device)

        def to(self, *args, **kwargs):
            if args and args[0] == "cuda":
                return self.cuda()
            return super().to(*args, **kwargs)

        def warm_up(self):
            return self.cuda().half()
    ''')


def test_self_cuda_in_a_class_with_its_own_cuda(tmp_path):
    found = findings(tmp_path, ENGINE, codes=["CUD102"])
    # not TRTEngine's `self.cuda()` (its own method); its `tensor.cuda()` is torch's; every
    # `.cuda()` of the module is torch's, its override included
    assert codes_at(found) == [("CUD102", 24, 38), ("CUD102", 29, 24), ("CUD102", 33, 25),
                               ("CUD102", 37, 21)]


def test_the_fix_never_makes_to_call_itself(tmp_path):
    _, fixed = run_on(tmp_path, ENGINE, codes=["CUD102"], unsafe=True)
    lines = fixed.decode().splitlines()
    text = "\n".join(lines)
    # TRTEngine.to calls its own method; Backbone.to keeps its finding, without a fix
    assert lines.count("            return self.cuda()") == 2
    assert "        self.bindings[name] = tensor.to(pick_device())" in text
    assert "        return super().to(pick_device(device))" in text
    assert "        return self.to(pick_device()).half()" in text

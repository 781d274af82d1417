"""`--fix` never loses data: encoding, BOM, line endings, mode, atomicity, parsable results."""

from __future__ import annotations

import os
import runpy
import stat
import sys
from pathlib import Path

import libcst as cst
import pytest
import torch

from cudalint.cli import main
from cudalint.engine.lint import autofix

FIXED_TAIL = "model = Net().to(pick_device())"


def test_crlf_line_endings_are_kept(chdir_tmp):
    path = chdir_tmp / "train.py"
    path.write_bytes(b"import torch\r\nmodel = Net().cuda()\r\nprint('done')\r\n")
    main(["check", "--fix", "."])
    data = path.read_bytes()
    assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert FIXED_TAIL.encode() in data


def test_bom_is_kept(chdir_tmp):
    path = chdir_tmp / "train.py"
    path.write_bytes(b"\xef\xbb\xbfmodel = Net().cuda()\n")
    main(["check", "--fix", "."])
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert data.count(b"\xef\xbb\xbf") == 1
    assert FIXED_TAIL.encode() in data


def test_declared_encoding_is_kept(chdir_tmp):
    path = chdir_tmp / "train.py"
    source = "# -*- coding: latin-1 -*-\nname = 'café'\nmodel = Net().cuda()\n"
    path.write_bytes(source.encode("latin-1"))
    main(["check", "--fix", "."])
    data = path.read_bytes()
    assert "café".encode("latin-1") in data
    assert FIXED_TAIL in data.decode("latin-1")


def test_file_mode_is_kept_and_no_temporary_file_is_left(chdir_tmp):
    path = chdir_tmp / "train.py"
    path.write_text("model = Net().cuda()\n")
    path.chmod(0o751)
    main(["check", "--fix", "."])
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    # Only the device helper the fix imports is new.
    assert sorted(p.name for p in chdir_tmp.iterdir()) == ["_device.py", "train.py"]


def test_symlinked_file_is_fixed_through_the_link(chdir_tmp):
    target = chdir_tmp / "real.py"
    target.write_text("model = Net().cuda()\n")
    link = chdir_tmp / "link.py"
    os.symlink(target, link)
    main(["check", "--fix", "link.py"])
    assert link.is_symlink()
    assert FIXED_TAIL in target.read_text()


def test_unparsable_fix_result_is_not_written(chdir_tmp, capsys, monkeypatch):
    path = chdir_tmp / "train.py"
    original = "model = Net().cuda()\n"
    path.write_text(original)

    class Broken:
        bytes = b"model = (\n"

    monkeypatch.setattr(autofix, "apply_fixes", lambda *args, **kwargs: Broken())
    code = main(["check", "--fix", "."])
    assert path.read_text() == original
    out = capsys.readouterr().out
    assert "does not parse" in out and code == 1


def test_diff_writes_nothing_and_exits_one(chdir_tmp, capsys):
    path = chdir_tmp / "train.py"
    path.write_text("model = Net().cuda()\n")
    assert main(["check", "--diff", "."]) == 1
    out = capsys.readouterr().out
    assert "-model = Net().cuda()" in out and "+" + FIXED_TAIL in out
    assert "Would fix 1 error." in out
    assert path.read_text() == "model = Net().cuda()\n"


def test_second_fix_is_a_no_op(chdir_tmp, capsys):
    path = chdir_tmp / "train.py"
    path.write_text("import torch\nx = torch.ones(2).cuda()\ny = x.to('cuda:0')\n")
    main(["check", "--fix", "."])
    first = path.read_bytes()
    capsys.readouterr()
    assert main(["check", "--fix", "."]) == 0
    assert path.read_bytes() == first
    assert "All checks passed!" in capsys.readouterr().out


@pytest.mark.parametrize("unsafe", [False, True])
def test_unsafe_fixes_need_the_flag(chdir_tmp, capsys, unsafe):
    path = chdir_tmp / "load.py"
    path.write_text("import torch\nstate = torch.load('ckpt.pt')\n")
    args = ["check", "--fix", "--select", "CUD111", "."]
    main([*args, "--unsafe-fixes"] if unsafe else args)
    text = path.read_text()
    assert ("map_location=pick_device()" in text) is unsafe
    if not unsafe:
        assert "1 hidden fix can be enabled with the `--unsafe-fixes` option." in \
            capsys.readouterr().out


def test_fixed_files_parse_and_move_to_the_device_they_named(chdir_tmp, monkeypatch):
    """The fixed file is exactly the rewrite (the helper imported once, `.cuda(0)` moved to
    `pick_device(0)`), parses, and runs: on a CUDA machine it names cuda:0 as before, here
    it moves the tensor to the CPU with its values."""
    Path("a.py").write_text("def f(x):\n    return x.cuda(0)\n")
    main(["check", "--fix", "."])
    text = Path("a.py").read_text()
    assert text == "from _device import pick_device\n\ndef f(x):\n    return x.to(pick_device(0))\n"
    cst.parse_module(text)
    monkeypatch.syspath_prepend(str(chdir_tmp))
    monkeypatch.delitem(sys.modules, "_device", raising=False)  # another test's helper
    monkeypatch.delenv("CUDALINT_DEVICE", raising=False)
    fixed = runpy.run_path(str(chdir_tmp / "a.py"))
    helper = sys.modules["_device"]
    assert Path(helper.__file__).resolve() == (chdir_tmp / "_device.py").resolve()
    monkeypatch.setattr(helper, "_cuda_available", lambda: True)
    assert fixed["pick_device"](0) == torch.device("cuda", 0)
    monkeypatch.setattr(helper, "_cuda_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(helper, "_other_accelerator", lambda: None)
    x = torch.arange(3.0)
    moved = fixed["f"](x)
    assert moved.device == torch.device("cpu") and torch.equal(moved, x)
    monkeypatch.delitem(sys.modules, "_device", raising=False)


def test_long_helper_import_is_wrapped_one_name_a_line(chdir_tmp):
    path = Path("bench.py")
    path.write_text(
        "import torch\n\ntorch.cuda.manual_seed_all(0)\nprint(torch.cuda.get_device_name(0))\n"
        "torch.cuda.synchronize()\nprint(torch.cuda.max_memory_allocated())\n"
        "x = torch.ones(2).cuda()\ntorch.cuda.empty_cache()\n"
    )
    main(["check", "--fix", "--select", "CUD1", "."])
    lines = path.read_text().splitlines()
    start = lines.index("from _device import (")
    assert lines[start + 1 : start + 8] == [
        "    empty_cache,", "    get_device_name,", "    manual_seed_all,",
        "    max_memory_allocated,", "    pick_device,", "    synchronize,", ")",
    ]
    assert max(len(line) for line in lines) <= 88


def test_fix_never_calls_a_helper_hidden_by_a_local_name(chdir_tmp):
    path = Path("train.py")
    source = (
        "def run(model, pick_device):\n    return model.cuda()\n\n\n"
        "def other(model):\n    return model.cuda()\n"
    )
    path.write_text(source)
    main(["check", "--fix", "--select", "CUD102", "."])
    text = path.read_text()
    assert "def run(model, pick_device):\n    return model.cuda()\n" in text
    assert "def other(model):\n    return model.to(pick_device())\n" in text


def test_a_helper_name_spelled_elsewhere_as_an_attribute_still_hides_locally(chdir_tmp):
    """A local `synchronize` hides the helper in its function only; `torch.cuda.synchronize`
    spells the name too, as an attribute, which binds nothing."""
    path = Path("train.py")
    path.write_text(
        "import torch\n\n\n"
        "def run():\n    synchronize = print\n    torch.cuda.synchronize()\n"
        "    synchronize('done')\n\n\n"
        "def other():\n    torch.cuda .\\\n        synchronize()\n"
    )
    main(["check", "--fix", "--select", "CUD105", "."])
    text = path.read_text()
    assert "    synchronize = print\n    torch.cuda.synchronize()\n" in text
    assert "def other():\n    synchronize()\n" in text


# Every form a fix rewrites (one or more per code that has a fix), written on `self` where it
# has a receiver, to be placed in methods named like what the fixes write (`to`) or remove.
FIX_FORMS = (
    ("CUD101", "self.x = self.x.to('cuda:0')"),
    ("CUD101", "device = torch.device('cuda', rank)"),
    ("CUD102", "self.cuda()"),
    ("CUD102", "self.cuda(1)"),
    ("CUD102", "self.cuda(non_blocking=True)"),
    ("CUD102", "self.weight = self.weight.cuda()"),
    ("CUD103", "dev = 'cuda' if torch.cuda.is_available() else 'cpu'"),
    ("CUD104", "self.type(torch.cuda.FloatTensor)"),
    ("CUD104", "buf = torch.cuda.FloatTensor(2)"),
    ("CUD105", "torch.cuda.synchronize()"),
    ("CUD105", "torch.cuda.manual_seed(0)"),
    ("CUD105", "torch.cuda.empty_cache()"),
    ("CUD106", "scaler = torch.cuda.amp.GradScaler()"),
    ("CUD106", "ctx = torch.autocast('cuda')"),
    ("CUD111", "state = torch.load(path)"),
    ("CUD113", "self.to(rank)"),
    ("CUD701", "dist.init_process_group('nccl')"),
)
_METHODS = ("cuda", "to", "type", "half", "synchronize")


def _class(header: str) -> str:
    body = "".join(f"        {form}\n" for _, form in FIX_FORMS)
    return header + "".join(
        f"    def {name}(self, path=None, rank=0):\n{body}        return self\n\n"
        for name in _METHODS)


def _calls_of_itself(source: str) -> dict[str, int]:
    """For each method, the calls `self.<its own name>(...)` in it; for each module-level
    function, the calls of its own name."""
    import ast

    counts: dict[str, int] = {}
    tree = ast.parse(source)
    for top in tree.body:
        if isinstance(top, ast.FunctionDef):
            counts[top.name] = sum(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                                   and n.func.id == top.name for n in ast.walk(top))
        for method in top.body if isinstance(top, ast.ClassDef) else ():
            if isinstance(method, ast.FunctionDef):
                counts[f"{top.name}.{method.name}"] = sum(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    and n.func.attr == method.name and isinstance(n.func.value, ast.Name)
                    and n.func.value.id == "self" for n in ast.walk(method))
    return counts


def test_no_fix_makes_a_method_or_function_call_itself(chdir_tmp):
    """Issue 41: `self.cuda()` inside `def to(self)` became `self.to(pick_device())`, which
    recurses forever on CUDA. Every fix form, in methods named like what the fixes write, of a
    class with its own `cuda`/`to` (no module) and of an `nn.Module` overriding them, and in
    module-level functions named like the helpers the fixes call."""
    from cudalint.rules import all_rules

    fixing = {rule.code for rule in all_rules()
              if any(getattr(example, "fixed", None) for example in rule.INVALID)}
    assert fixing <= {code for code, _ in FIX_FORMS}, "a fix with no form here"
    head = "import torch\nimport torch.distributed as dist\nimport torch.nn as nn\n\n\n"
    classes = head + _class("class Engine:\n") + _class("class Net(nn.Module):\n")
    functions = head + "".join(
        f"def {name}(path=None, rank=0):\n" + "".join(
            f"    {form}\n" for _, form in FIX_FORMS if "self" not in form) + "\n\n"
        for name in ("synchronize", "empty_cache", "load"))
    (chdir_tmp / "engine.py").write_text(classes)
    (chdir_tmp / "ops.py").write_text(functions)
    main(["check", "--fix", "--unsafe-fixes", "--no-cache", "engine.py", "ops.py"])
    for name, before in (("engine.py", classes), ("ops.py", functions)):
        after, calls = _calls_of_itself((chdir_tmp / name).read_text()), _calls_of_itself(before)
        # (`self.cuda()` inside `def cuda` may become `self.to(...)`: fewer, never more)
        assert {f: n for f, n in after.items() if n > calls[f]} == {}, name
    fixed = (chdir_tmp / "engine.py").read_text()
    # the fixes did apply in the classes: the module's `half` moves itself with `to`
    half = fixed.split("    def half(", 2)[2].split("    def ", 1)[0]
    assert "self.to(pick_device(), non_blocking=True)" in half
    assert fixed.count("pick_device") > 30 and "torch.cuda.synchronize()" not in fixed

"""The rules' precise terms (cudalint.engine.first_pass.prefilter: patterns and conjunctions): a
file or a function naming none is not read, and every spelling a rule reports still names one, so a
check with the first pass finds what a check of the whole file, without it, finds."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cudalint.engine.contract import PythonRule
from cudalint.engine.first_pass import sparse
from cudalint.engine.first_pass.prefilter import GAP, Prefilter, caseless_word, word
from cudalint.engine.lint.python import PythonResult, lint_python
from cudalint.engine.walk.context import Settings
from cudalint.kinds import FileKind
from cudalint.rules import all_rules, index, rule_by_code

RULES = tuple(r for r in all_rules() if issubclass(r, PythonRule))
SETTINGS = Settings(target_torch=(2, 13))
PREFILTER = Prefilter.for_rules(RULES, SETTINGS)


def _checks(source: str) -> tuple[PythonResult, PythonResult]:
    """The first pass's check (terms, blanked functions) and a whole one without terms."""
    data = source.encode()
    first_pass = lint_python(data, Path("train.py"), RULES, SETTINGS, prefilter=PREFILTER,
                             want_edits=True)
    whole = lint_python(data, Path("train.py"), RULES, SETTINGS, want_edits=True, sparse=False)
    return first_pass, whole


def _found_alike(source: str, code: str) -> None:
    """The whole check finds `code` once, and the first pass's check finds the same."""
    first_pass, whole = _checks(source)
    assert [found for found, _ in _codes(whole)] == [code]
    assert first_pass.findings == whole.findings


def _codes(result: PythonResult) -> list[tuple[str | None, int]]:
    return [(f.code, f.location.row) for f in result.findings]


def _rule_prefilter(code: str) -> Prefilter:
    rule = rule_by_code(code)
    assert rule is not None
    return Prefilter.for_rules([rule], SETTINGS)


def _code_matches(prefilter: Prefilter, source: str) -> bool:
    node = ast.parse(source).body[0]
    return prefilter.matches_code(source.encode(), node, sparse.first_line(node))


def test_a_word_is_a_whole_identifier():
    pattern = Prefilter((), patterns=(word("to").encode(),))
    assert pattern.matches(b"x.to(device)\n") and pattern.matches(b"to = 1")
    assert not pattern.matches(b"import torch\nauto_cast = total\n")


def test_a_caseless_word_folds_as_ignorecase_does():
    """`re.IGNORECASE` takes the Kelvin sign for a `k` and a dotted capital I for an `i`;
    Python identifiers may hold both."""
    pattern = Prefilter((), patterns=(caseless_word(["local_?rank", "gpu(?:_?id)?"]).encode(),))
    for name in ("local_rank", "LocalRank", "LOCAL_RANK", "local_ran\u212a", "GPU_Id",
                 "gpu_\u0130d", "gpuid"):
        assert pattern.matches(f"x.to({name})\n".encode()), name
    for name in ("world_local_rank", "local_ranks", "gpus", "use_gpu"):
        assert not pattern.matches(f"x.to({name})\n".encode()), name


def test_a_gap_reads_a_line_of_hashes_at_once():
    """A comment runs to the end of its line: read as several, a line of `#`s splits in
    2**n ways, and the search never ends."""
    pattern = Prefilter((), patterns=(f"{word('to')}{GAP}\\(".encode(),))
    assert not pattern.matches(b"x = to\n" + b"#" * 200 + b"\n")
    assert pattern.matches(b"y = x.to \\\n  # why\n (0)\n")


INTEGER_ORDINALS = {
    "spaces around =": "import torch\nx = torch.zeros(3, device = 0)\n",
    "a space after (": "def move(x):\n    return x.to( 1)\n",
    "a line break": "def move(x):\n    return x.to(\n        2)\n",
    "parentheses": "def move(x):\n    return x.to((3))\n",
    "a comment": "def move(x):\n    return x.to(  # the second card\n        0x1)\n",
    "a backslash-newline": "def move(x):\n    return x.to \\\n        (0)\n",
    "after *args": "def move(x, args):\n    return x.to(*args, 0)\n",
    "an alias of torch.device":
        "from torch import device as D\n\n\ndef place():\n    return D(0)\n",
}


@pytest.mark.parametrize("source", INTEGER_ORDINALS.values(), ids=INTEGER_ORDINALS.keys())
def test_an_integer_ordinal_spelled_any_way_is_found(source):
    _found_alike(source, "CUD113")


ORDINAL_NAMES = {
    "camel case": "import torch\n\n\ndef move(model):\n    return model.to(LocalRank)\n",
    "an attribute, a comment": (
        "import torch\n\n\ndef move(model, args):\n"
        "    return model.to(parse(args).gpu_idx  # from the launcher\n    )\n"
    ),
    "a Kelvin sign": "import torch\n\n\ndef move(model):\n    return model.to(local_ran\u212a)\n",
    "a keyword": (
        "import torch\n\n\ndef zeros(rank):\n    return torch.zeros(3, device=rank \\\n"
        "                       , dtype=torch.float32)\n"
    ),
    "an alias": (
        "from torch import device as Device\n\n\ndef place(args):\n"
        "    return Device(args.GPU_ID)\n"
    ),
}


@pytest.mark.parametrize("source", ORDINAL_NAMES.values(), ids=ORDINAL_NAMES.keys())
def test_an_ordinal_name_spelled_any_way_is_found(source):
    _found_alike(source, "CUD113")


DISTRIBUTED = '''\
import torch
import torch.distributed as dist


def log_rank(rank, world_size):
    """Only the first rank prints; the tensor goes to(device) elsewhere."""
    if rank == 0:
        print(f"rank {rank} of {world_size}")
    return [r for r in range(world_size) if r != rank]


def tensor_rank(x):
    rank = x.dim()
    return x.to(torch.float16).reshape(-1) if rank > 2 else x


def setup(args, model):
    dist.init_process_group("gloo")
    return model.to(args.local_rank)
'''


def test_an_ordinal_name_counts_only_as_an_argument_where_to_or_device_is_called():
    """`rank` in a comparison, an f-string or a range, and a `rank` next to a `.to(dtype)`,
    name nothing CUD113 could report: those functions are not read."""
    first_pass, whole = _checks(DISTRIBUTED)
    assert first_pass.module is not None
    assert "def log_rank" not in first_pass.module.code
    assert "def tensor_rank" not in first_pass.module.code
    assert "model.to(args.local_rank)" in first_pass.module.code
    assert _codes(whole) == [("CUD113", 19)]
    assert first_pass.findings == whole.findings


def test_a_file_naming_an_ordinal_but_no_device_is_not_parsed():
    prefilter = _rule_prefilter("CUD113")
    assert prefilter.within(b"def shard(rank, world):\n    return rank * world\n") is None
    assert prefilter.within(b"def to_gpu(x, gpu):\n    return x.to(gpu)\n") is not None


def test_the_index_picks_a_rule_by_its_patterns():
    """A run of a few files imports only the rules whose terms they name: patterns count."""
    def picked(text: bytes) -> bool:
        return any(entry["code"] == "CUD113"
                   for entry in index.entries_for([FileKind.PYTHON], [text]))
    assert picked(b"y = x.to( 1)\n") and picked(b"y = x.to(args.local_rank)\n")
    assert not picked(b"y = x.to(dtype)\nrank = 2\n")


def test_a_conjunction_counts_only_where_one_text_names_all_its_parts():
    prefilter = Prefilter((), together=((word("rank").encode(), word("to").encode()),))
    assert _code_matches(prefilter, "def f(x, rank):\n    return x.to(rank)\n")
    assert not _code_matches(prefilter, "def f(x, rank):\n    '''Goes to rank 0.'''\n")
    narrowed = prefilter.within(b"def f(rank):\n    return rank\n\n\ndef g(x):\n    x.to(1)\n")
    assert narrowed is not None and narrowed.together
    assert prefilter.within(b"def f(rank):\n    return rank\n") is None


def _function(body: str, head: str = "") -> str:
    return f"import torch\n{head}\n\ndef make(x, d):\n    {body}\n"


FLOAT64 = {
    "float spaced": _function("return torch.zeros(3, dtype = float, device=d)"),
    "complex": _function("return torch.ones(2, dtype=complex, device=d)"),
    "in parentheses": _function("return torch.zeros(1, dtype=(\n        float), device=d)"),
    "to(float)": _function("return x.to(float).to('mps')"),
    "type(float) on two lines": _function("return x.type(\n        float).to('mps')"),
    "an assigned builtin": _function("return torch.zeros(3, dtype=DTYPE, device=d)",
                                     "DTYPE = float\n"),
    "the default dtype": _function("return x.to('mps')", "torch.set_default_dtype(float)\n"),
    "astype": _function("return torch.from_numpy(x.astype('d')).to('mps')"),
    "numpy imported in the function": _function(
        "import numpy as np\n    return torch.from_numpy(np.random.rand(3)).to('mps')"),
}


@pytest.mark.parametrize("source", FLOAT64.values(), ids=FLOAT64.keys())
def test_float64_spelled_any_way_is_found(source):
    _found_alike(source, "CUD601")


CONVERSIONS = '''\
import numpy as np
import torch


def to_numpy(t):
    """Return the array: t.numpy() copies nothing."""
    return t.detach().cpu().numpy()


def scale(x: float, y: float) -> float:
    if isinstance(x, (int, float)):
        return float(x) * y
    return y


def double_backward(grad):
    return grad * 2


def noisy(d):
    return torch.from_numpy(np.random.rand(3)).to("mps")
'''


def test_float64_terms_skip_numpy_methods_annotations_and_other_doubles():
    """`.numpy()`, `x: float`, `isinstance(x, float)` and `double_backward` name nothing
    CUD601 could report on: only `noisy` (numpy's own float64 default) is read."""
    first_pass, whole = _checks(CONVERSIONS)
    assert first_pass.module is not None
    code = first_pass.module.code
    assert "def to_numpy" not in code and "def scale" not in code
    assert "def double_backward" not in code and "def noisy" in code
    assert _codes(whole) == [("CUD601", 21)]
    assert first_pass.findings == whole.findings


def test_a_call_name_counts_in_a_function_that_imports_it_not_in_any_that_imports():
    """`mode` of a `lambda mode: ...` in a function importing something else is no call of
    `torch.mode`; `from torch import mode as m` is, and `__import__("cupy")` imports cupy."""
    prefilter = PREFILTER.within(b"mode cupy __import__ lambda")
    assert prefilter is not None
    local_import = (
        "def current(stack):\n    from torch.overrides import _get_current_function_mode_stack\n"
        "    return next(filter(lambda mode: mode.active, stack), None)\n"
    )
    assert not _code_matches(prefilter, local_import)
    assert _code_matches(prefilter, "def f(x):\n    from torch import mode as m\n    return m(x)\n")
    assert _code_matches(prefilter, "def f():\n    return __import__('cupy')\n")
    source = ("import torch\n\n\ndef f(x):\n    import os\n    from torch.linalg import eig as e\n"
              "    return e(x)\n")
    _found_alike(source, "CUD602")


def _alone(code: str, source: str) -> tuple[PythonResult, PythonResult]:
    """`_checks` with one rule enabled: its terms alone must keep what it reports."""
    rule = next(rule for rule in RULES if rule.code == code)  # CUD502's Python rule
    data = source.encode()
    first_pass = lint_python(data, Path("k.py"), [rule], SETTINGS,
                             prefilter=Prefilter.for_rules([rule], SETTINGS))
    return first_pass, lint_python(data, Path("k.py"), [rule], SETTINGS, sparse=False)


KERNELS = {
    "an alias of the package": "import cupy as cp\n\n\ndef k():\n    return cp.RawKernel(S, 'a')\n",
    "a spaced dotted alias": "import numba . cuda as nc\n\n\n@nc.jit\ndef k(a):\n    a[0] += 1\n",
    "a module imported from": "from numba import cuda\n\n\n@cuda.jit\ndef k(a):\n    a[0] += 1\n",
    "a decorator imported": "from triton import jit\n\n\n@jit\ndef k(x_ptr, n):\n    pass\n",
    "torch's jiterator": (
        "from torch.cuda import jiterator as jt\n\n\ndef f():\n    return jt._create_jit_fn(S)\n"
    ),
}


@pytest.mark.parametrize("source", KERNELS.values(), ids=KERNELS.keys())
def test_a_kernel_reached_through_an_import_is_found(source):
    first_pass, whole = _alone("CUD303", source)
    assert [f.code for f in whole.findings] == ["CUD303"]
    assert first_pass.findings == whole.findings


INDUCTOR = '''\
import torch
import triton
import triton.language as tl


@torch.jit.script
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def grid(n):
    return (triton.cdiv(n, 128),)


@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass
'''


def test_a_kernel_needs_its_package_and_its_decorator_in_one_text():
    """`torch.jit` is no triton kernel, nor is `triton.cdiv`: only the kernel is read."""
    first_pass, whole = _alone("CUD303", INDUCTOR)
    assert first_pass.module is not None
    assert "def scale" not in first_pass.module.code and "def grid" not in first_pass.module.code
    assert [(f.code, f.location.row) for f in whole.findings] == [("CUD303", 15)]
    assert first_pass.findings == whole.findings


LOADS = {
    "spaced": "import torch\n\n\ndef f(p):\n    return torch . load (\n        p)\n",
    "a module alias": "import torch as th\n\n\ndef f(p):\n    return th.load(p)\n",
    "an alias in the function": "def f(p):\n    import torch as th\n    return th.load(p)\n",
    "imported": "from torch import load\n\n\ndef f(p):\n    return load(p)\n",
    "imported as": "from torch import (\n    load as L)\n\n\ndef f(p):\n    return L(p)\n",
}


@pytest.mark.parametrize("source", LOADS.values(), ids=LOADS.keys())
def test_torch_load_spelled_any_way_is_found(source):
    first_pass, whole = _alone("CUD111", source)
    assert [f.code for f in whole.findings] == ["CUD111"]
    assert first_pass.findings == whole.findings


CHECKPOINTS = '''\
import json

import torch


class Store:
    def load(self, path):
        with open(path) as f:
            return json.load(f)

    def restore(self, path):
        return self.load(path)

    def weights(self, path):
        return torch.load(path)
'''


def test_other_loads_are_not_read():
    """`def load`, `json.load(f)` and `self.load(path)` are no `torch.load`."""
    first_pass, whole = _alone("CUD111", CHECKPOINTS)
    assert first_pass.module is not None
    assert "json.load(f)" not in first_pass.module.code
    assert "self.load(path)" not in first_pass.module.code
    assert [(f.code, f.location.row) for f in whole.findings] == [("CUD111", 15)]
    assert first_pass.findings == whole.findings


CUTE_DSL = '''\
import torch
from cutlass import Float32, const_expr
import cutlass.cute as cute


def scale(x: Float32, flag):
    if const_expr(flag):
        return x * 2
    return cute.arch.fmax(x, 0)


def move(model):
    return model.cuda()
'''


def test_what_a_cuda_only_import_binds_is_not_followed():
    """CUD201 reports the imports themselves: `scale`, which uses only what they bind, names
    nothing any rule reads, and is not read; the imports are still reported."""
    first_pass, whole = _checks(CUTE_DSL)
    assert first_pass.module is not None
    assert "def scale" not in first_pass.module.code and "def move" in first_pass.module.code
    assert [code for code, _ in _codes(whole)] == ["CUD201", "CUD201", "CUD102"]
    assert first_pass.findings == whole.findings


def test_an_alias_of_import_module_is_still_followed():
    first_pass, whole = _alone(
        "CUD201", "from importlib import import_module as load\n\n\ndef f():\n"
                  "    return load('apex')\n")
    assert [f.code for f in whole.findings] == ["CUD201"]
    assert first_pass.findings == whole.findings


FOLLOWED = '''\
import torch
from torch import cuda, nn
from torch.cuda import synchronize as sync
from .cuda import memory_stats

SOLVERS = {"eig": torch.linalg.eig, "solve": torch.linalg.solve}
HAS_GPU = torch.cuda.is_available()


def build():
    return nn.Linear(3, 4)


def report():
    return memory_stats()


def pick(name):
    return SOLVERS[name]


def wait():
    sync()


def check():
    assert HAS_GPU
'''


def test_only_names_a_rule_follows_make_a_function_worth_reading():
    """`nn` is imported beside `cuda` but holds no CUDA; a relative import's names resolve
    to nothing; `SOLVERS` holds `torch.linalg.eig`, but CUD602 follows no assignment. The
    alias of `torch.cuda.synchronize` and the probe CUD112 follows into `check` still count."""
    first_pass, whole = _checks(FOLLOWED)
    assert first_pass.module is not None
    code = first_pass.module.code
    for unread in ("def build", "def report", "def pick"):
        assert unread not in code
    assert "def wait" in code and "def check" in code
    assert _codes(whole) == [("CUD105", 23), ("CUD112", 27)]
    assert first_pass.findings == whole.findings


def test_a_rule_follows_names_through_assignments_unless_it_says_otherwise():
    """Every rule that remembers assignments says so; the default is to follow them."""
    from cudalint.engine.contract import Rule
    from cudalint.rules.assignments import TracksAssignments

    assert Rule.follows_assignments
    for rule in RULES:
        if issubclass(rule, TracksAssignments):
            assert rule.follows_assignments, rule.code


WHAT_ELSE = '''\
import ctypes
from ctypes import byref, c_int

import numpy as np
import torch
import triton
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from triton import Config

LOADER_KWARGS = {"num_workers": 2, "pin_memory": True}


def stats(values):
    return np.mean(values), np.std(values)


def count(lib):
    n = c_int(0)
    lib.count(byref(n))
    return n.value


def describe():
    return sorted(LOADER_KWARGS)


def configs():
    return [Config({"BLOCK": 128}, num_warps=4)]


def load(device):
    return torch.from_numpy(np.random.rand(3)).to(device)


def wrap(model, rank):
    return DDP(model, device_ids=[rank])


def driver():
    return ctypes.CDLL("libcuda.so.1")


def loader(dataset):
    return DataLoader(dataset, **LOADER_KWARGS)


@triton.jit
def kernel(x_ptr):
    pass
'''


def test_a_followed_name_counts_only_beside_what_its_rule_needs_there():
    """`np` without a move to a device (CUD601), what `from ctypes import byref` binds
    without a loader (CUD304), a kwargs dict that no call unpacks (CUD603) and
    `triton.Config` without a kernel's decorator (CUD303): none of those functions can
    report. The alias of DDP and of a loader, and the dict unpacked, still count."""
    first_pass, whole = _checks(WHAT_ELSE)
    assert first_pass.module is not None
    code = first_pass.module.code
    for unread in ("def stats", "def count", "def describe", "def configs"):
        assert unread not in code
    assert _codes(whole) == [("CUD201", 6), ("CUD201", 9), ("CUD601", 33), ("CUD702", 37),
                             ("CUD304", 41), ("CUD603", 11), ("CUD303", 48)]
    assert first_pass.findings == whole.findings


REACHING = {
    "a move": "return X.to(device)",
    "a spaced move": "return X . cuda (\n        )",
    "a device keyword": "return torch.zeros(3, dtype=DTYPE, device = device)",
    "a tensor made from one on the device": "return G.new_zeros(3, dtype=DTYPE)",
    "an alias of the setter": "sdd(DTYPE)",
}


@pytest.mark.parametrize("body", REACHING.values(), ids=REACHING.keys())
def test_a_float64_a_name_holds_reaches_a_device_any_way(body):
    """The function names no float64, only a name that holds one, and what moves it."""
    source = ("import torch\nfrom torch import set_default_dtype as sdd\n\n"
              "X = torch.ones(3, dtype=torch.float64)\nDTYPE = torch.float64\n"
              "G = torch.ones(1).cuda()\n\n\ndef f(device):\n    " + body + "\n")
    first_pass, whole = _alone("CUD601", source)
    assert [f.code for f in whole.findings] == ["CUD601"]
    assert first_pass.findings == whole.findings


LOADS_OF_LIBRARIES = {
    "spaced": "import ctypes\n\n\ndef f():\n    return ctypes.cdll . LoadLibrary(\n"
              "        'libcublas.so')\n",
    "an alias of the loader": "from ctypes import CDLL as Load\n\n\ndef f():\n"
                              "    return Load('libcudart.so.12')\n",
    "an alias of the module": "import ctypes.util as cu\n\n\ndef f():\n"
                              "    return cu.find_library('cudart')\n",
}


@pytest.mark.parametrize("source", LOADS_OF_LIBRARIES.values(), ids=LOADS_OF_LIBRARIES.keys())
def test_a_library_load_spelled_any_way_is_found(source):
    _found_alike(source, "CUD304")


def test_a_function_naming_ctypes_without_a_loader_is_not_read():
    source = ("import ctypes\n\n\ndef size(n):\n    return ctypes.sizeof(ctypes.c_int) * n\n\n\n"
              "def load():\n    return ctypes.CDLL('libcudart.so')\n")
    first_pass, whole = _checks(source)
    assert first_pass.module is not None and "def size" not in first_pass.module.code
    assert _codes(whole) == [("CUD304", 9)]
    assert first_pass.findings == whole.findings


PINNING = {
    "a spaced keyword": "def make(ds):\n    return DataLoader(ds, pin_memory = True)\n",
    "True in parentheses": (
        "def make(ds):\n    return DataLoader(ds, pin_memory=(\n        True))\n"
    ),
    "a name assigned True": (
        "PIN = True\n\n\ndef make(ds):\n    return DataLoader(ds, pin_memory=PIN)\n"
    ),
    "a non-ASCII name": "\u00c9PINGLE = True\n\n\ndef make(ds):\n"
                        "    return DataLoader(ds, pin_memory=\u00c9PINGLE)\n",
    "a spaced method call": "def move(batch):\n    return batch . pin_memory (\n        )\n",
    "a method call after a backslash": (
        "def move(batch):\n    return batch.\\\n        pin_memory()\n"
    ),
    "a dict key over two lines": (
        "KW = {'num_workers': 2, 'pin_memory'\n      : True}\n\n\n"
        "def make(ds):\n    return DataLoader(ds, **KW)\n"
    ),
    "a triple-quoted dict key": (
        "def make(ds):\n    kw = {'''pin_memory''': True}\n    return DataLoader(ds, **kw)\n"
    ),
    "dict() updated": (
        "def make(ds):\n    kw = {}\n    kw.update(dict(pin_memory=True))\n"
        "    return DataLoader(ds, **kw)\n"
    ),
}


@pytest.mark.parametrize("source", PINNING.values(), ids=PINNING.keys())
def test_pinned_memory_spelled_any_way_is_found(source):
    first_pass, whole = _alone("CUD603", "from torch.utils.data import DataLoader\n" + source)
    assert [f.code for f in whole.findings] == ["CUD603"]
    assert first_pass.findings == whole.findings


NOT_PINNING = '''\
import torch
from torch.utils.data import DataLoader


class Loader:
    def __init__(self, dataset, pin_memory: bool = False):
        self.pin_memory = pin_memory
        self.dataset = dataset

    def pin_memory_device(self):
        return "mps" if self.pin_memory else ""

    def build(self):
        return DataLoader(self.dataset, pin_memory=False)

    def pin_memory(self):
        return self

    def empty(self, n):
        return torch.empty(n, pin_memory=None)


def make(dataset):
    return DataLoader(dataset, pin_memory=True)
'''


def test_pin_memory_counts_only_given_what_may_be_true_or_called():
    """A parameter, an attribute, `pin_memory=False`, `=None` and `def pin_memory` name
    nothing CUD603 could report: only `make` is read."""
    first_pass, whole = _alone("CUD603", NOT_PINNING)
    assert first_pass.module is not None
    code = first_pass.module.code
    for unread in ("def __init__", "def pin_memory_device", "def build", "def pin_memory(self)",
                   "def empty"):
        assert unread not in code, unread
    assert [(f.code, f.location.row) for f in whole.findings] == [("CUD603", 24)]
    assert first_pass.findings == whole.findings


CHOICES = {
    "an escaped string and a flag": (
        "def pick(use_cuda):\n    return '\\x63uda' if use_cuda else 'cpu'\n"
    ),
    "an escaped string and an imported probe": (
        "from torch.cuda import is_available\n\n\n"
        "def pick():\n    return torch.device('\\u0063uda:0' if is_available() else 'cpu')\n"
    ),
    "a tensor's flag": (
        "def pick(x):\n    return '\\N{LATIN SMALL LETTER C}uda' if x.is_cuda else 'cpu'\n"
    ),
}


@pytest.mark.parametrize("source", CHOICES.values(), ids=CHOICES.keys())
def test_a_choice_of_an_escaped_cuda_string_is_found(source):
    first_pass, whole = _alone("CUD103", "import torch\n" + source)
    assert [f.code for f in whole.findings] == ["CUD103"]
    assert first_pass.findings == whole.findings


MPS_PROBES = '''\
import torch
import torch.distributed as dist

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def ready():
    return dist.is_available() and dist.is_initialized()


def has_mps():
    return torch.backends.mps.is_built()
'''


def test_an_availability_check_counts_only_for_mps_or_beside_a_cuda_string():
    """`dist.is_available()` chooses no device and is not read; an MPS probe anywhere in the
    module keeps the module's choice from being reported, so it is read."""
    first_pass, whole = _alone("CUD103", MPS_PROBES)
    assert first_pass.module is not None
    assert "def ready" not in first_pass.module.code
    assert "def has_mps" in first_pass.module.code
    assert whole.findings == [] and first_pass.findings == []


REQUIREMENTS = {
    "a capital flag": "def main(USE_CUDA):\n    if not USE_CUDA:\n        raise SystemExit(1)\n",
    "an availability flag": "def main(CUDA_AVAILABLE):\n    assert CUDA_AVAILABLE\n",
    "a flag named Cuda": "def main(Cuda):\n    assert Cuda, 'run with --cuda'\n",
    "a tensor's flag": "def main(x):\n    assert x.is_cuda\n",
}


@pytest.mark.parametrize("source", REQUIREMENTS.values(), ids=REQUIREMENTS.keys())
def test_a_cuda_requirement_on_a_flag_in_any_case_is_found(source):
    first_pass, whole = _alone("CUD112", source)
    assert [f.code for f in whole.findings] == ["CUD112"]
    assert first_pass.findings == whole.findings
    _found_alike(source, "CUD112")


CUDA_IN_NAMES = '''\
import os

import torch
from torch.profiler import ProfilerActivity


def sample_inputs(op_info, device, dtype):
    return [torch.ones(3, device=device, dtype=dtype)]


OPS = dict(dtypesIfCUDA=(torch.half,), onlyCUDA=True)


def env(TEST_CUDA):
    return TEST_CUDA and os.environ.get("HOME")


def activities():
    return [ProfilerActivity.CPU, ProfilerActivity.CUDA]
'''


def test_capitals_count_only_as_an_api_or_an_environment_variable():
    """`dtypesIfCUDA`, `onlyCUDA` and `TEST_CUDA` are no CUDA API (CUD110) and no variable
    of the environment (CUD502): only `activities` is read, and for CUD502 nothing."""
    first_pass, whole = _alone("CUD502", CUDA_IN_NAMES)
    assert first_pass.module is None and whole.findings == []
    first_pass, whole = _alone("CUD110", CUDA_IN_NAMES)
    assert first_pass.module is not None
    assert "def env" not in first_pass.module.code
    assert "dtypesIfCUDA" not in first_pass.module.code
    assert [(f.code, f.location.row) for f in whole.findings] == [("CUD110", 19)]
    assert first_pass.findings == whole.findings


VARIABLES = {
    "a concatenated name": "def f():\n    return os.environ['CUDA_' 'HOME']\n",
    "an escaped name": "def f():\n    return os.getenv('CUDA\\x5fPATH')\n",
    "a keyword of update": "def f():\n    os.environ.update(FORCE_CUDA='1')\n",
    "a search path's value": (
        "def f(p):\n    os.environ['PATH'] = p + ':${CUDA_HOME}/bin'\n"
    ),
    "a name after a prefix": "def f():\n    return os.environ['PYTORCH_CUDA_ALLOC_CONF']\n",
}


@pytest.mark.parametrize("source", VARIABLES.values(), ids=VARIABLES.keys())
def test_a_cuda_environment_variable_spelled_any_way_is_found(source):
    first_pass, whole = _alone("CUD502", "import os\n\n\n" + source)
    assert [f.code for f in whole.findings] == ["CUD502"]
    assert first_pass.findings == whole.findings


BACKENDS = {
    "an alias of jax": "import jax as j\n\n\ndef f():\n    return j.devices('GPU')\n",
    "an alias of its function": (
        "from jax import local_devices as ld\n\n\ndef f():\n    return ld(backend='cuda')\n"
    ),
    "an escape": "import jax\n\n\ndef f(g):\n    return jax.jit(g, backend='\\x67pu')\n",
}


@pytest.mark.parametrize("source", BACKENDS.values(), ids=BACKENDS.keys())
def test_jax_on_the_gpu_backend_is_found(source):
    first_pass, whole = _alone("CUD202", source)
    assert [f.code for f in whole.findings] == ["CUD202"]
    assert first_pass.findings == whole.findings


def test_jax_without_a_backend_is_not_read():
    source = ("import jax\n\n\ndef to_jax(x):\n    return jax.numpy.asarray(x.numpy())\n\n\n"
              "def gpus():\n    return jax.devices('gpu')\n")
    first_pass, whole = _alone("CUD202", source)
    assert first_pass.module is not None and "def to_jax" not in first_pass.module.code
    assert [(f.code, f.location.row) for f in whole.findings] == [("CUD202", 9)]
    assert first_pass.findings == whole.findings


CUDNN = '''\
import torch
from torch.backends import cudnn as cd


def convolution(x, weight, use_cudnn):
    return torch._C._get_cudnn_enabled() and use_cudnn


def setup():
    cd.benchmark = True
'''


def test_cudnn_counts_as_the_module_not_inside_other_names():
    """`use_cudnn` and `_get_cudnn_enabled` set no flag of `torch.backends.cudnn`; the
    module's alias still counts."""
    first_pass, whole = _alone("CUD107", CUDNN)
    assert first_pass.module is not None and "def convolution" not in first_pass.module.code
    assert [(f.code, f.location.row) for f in whole.findings] == [("CUD107", 10)]
    assert first_pass.findings == whole.findings

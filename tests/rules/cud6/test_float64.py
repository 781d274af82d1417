"""CUD601 (float64 on a device): the spellings that put a float64 (or complex128) tensor on a
device MPS cannot hold it on, and their neighbours that must stay silent (prose, dict keys,
`x.dtype` comparisons, float64 kept on the CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.lint.python import lint_python
from cudalint.engine.walk.context import Settings
from cudalint.rules import all_rules
from tests.lint import codes_at, findings

HEAD = "import numpy as np\nimport torch\n\ndevice = torch.device('cuda')\n"


def _rows(tmp_path, body: str) -> list[tuple[int, int]]:
    found = findings(tmp_path, HEAD + body, codes=["CUD601"])
    return [(row - HEAD.count("\n"), column) for _code, row, column in codes_at(found)]


@pytest.mark.parametrize(("body", "where"), [
    pytest.param("x = torch.zeros(3, dtype=torch.float64, device=device)\n", [(1, 20)],
                 id="factory-dtype-and-device"),
    pytest.param("x = torch.ones(2, device='cuda:0', dtype=torch.complex128)\n", [(1, 36)],
                 id="complex128"),
    pytest.param("def f(t):\n    return t.double().to(device)\n", [(2, 14)], id="double-then-move"),
    pytest.param("def f(t):\n    return t.to(device).double()\n", [(2, 25)], id="move-then-double"),
    pytest.param("def f(t):\n    return t.to(device, torch.float64)\n", [(2, 25)],
                 id="to-device-and-dtype"),
    pytest.param("def f(t):\n    return t.cuda().to(dtype=torch.float64)\n", [(2, 24)],
                 id="cuda-then-dtype-keyword"),
    pytest.param("def f(a):\n    return torch.from_numpy(np.random.rand(3)).to(device)\n",
                 [(2, 12)], id="numpy-float64-moved"),
    pytest.param("def f():\n    a = np.ones(3)\n    t = torch.from_numpy(a)\n"
                 "    return t.to(device)\n", [(3, 9)], id="numpy-through-variables"),
    pytest.param("torch.set_default_dtype(torch.float64)\nx = torch.ones(1).to(device)\n",
                 [(1, 1)], id="default-dtype"),
    # float64 through arithmetic: numpy keeps float64 through `*`, `-`, `/` with a scalar
    pytest.param("def f():\n    return torch.from_numpy(np.ones(3) * 0.5).to(device)\n",
                 [(2, 12)], id="arithmetic-with-a-scalar"),
    pytest.param("def f():\n    noise = 2 * np.random.rand(8) - 1\n"
                 "    return torch.from_numpy(noise).to(device)\n", [(3, 12)],
                 id="arithmetic-on-the-right-through-a-variable"),
    pytest.param("def f(x):\n    scale = np.linspace(0, 1, 5)\n"
                 "    return torch.from_numpy(x.astype(np.float32) / scale).to(device)\n",
                 [(3, 12)], id="arithmetic-between-arrays"),
])
def test_float64_reaching_a_device_is_reported(tmp_path, body, where):
    assert _rows(tmp_path, body) == where


@pytest.mark.parametrize("body", [
    pytest.param("print('torch.float64 on the device fails on MPS: use .double() on cpu')\n",
                 id="print"),
    pytest.param("import logging\nlogging.warning('x.double().to(device) breaks on a Mac')\n",
                 id="log-message"),
    pytest.param('def f(t):\n    """Returns t.double().to(device)."""\n    return t\n',
                 id="docstring"),
    pytest.param("# x = torch.zeros(3, dtype=torch.float64, device=device)\nx = 1\n",
                 id="comment"),
    pytest.param("NAMES = {'float64': torch.float64, 'double': 'torch.double'}\n"
                 "x = torch.ones(1, device=device)\n", id="dict-keys-and-values"),
    pytest.param("SIZES = {torch.float64: 8, torch.complex128: 16}\n"
                 "x = torch.ones(1).to(device)\n", id="dtype-dict-keys"),
    pytest.param("def f(t):\n    y = t.to(device)\n    if y.dtype == torch.float64:\n"
                 "        print('double')\n    return y\n", id="dtype-comparison"),
    pytest.param("def f(t):\n    return t.to(device) if t.dtype != torch.double else t\n",
                 id="dtype-comparison-in-expression"),
    pytest.param("x = torch.zeros(3, dtype=torch.float64)\n", id="float64-on-the-cpu"),
    pytest.param("x = torch.zeros(3, dtype=torch.float64, device='cpu')\n", id="cpu-device"),
    pytest.param("def f(t):\n    return t.to(device).cpu().double()\n", id="back-on-the-cpu"),
    pytest.param("def f(t):\n    return t.double().float().to(device)\n", id="made-float32-first"),
    pytest.param("x = torch.zeros(3, dtype=torch.float32, device=device)\n", id="float32"),
    pytest.param("def f():\n    return torch.from_numpy(np.ones(3, dtype=np.float32)).to(device)\n",
                 id="numpy-float32"),
    pytest.param("def f():\n    a = np.ones(3, dtype=np.float32) * 2 - 1\n"
                 "    return torch.from_numpy(a).to(device)\n", id="float32-arithmetic"),
    pytest.param("def f():\n    return torch.from_numpy(np.ones(3) * 0.5).float().to(device)\n",
                 id="arithmetic-made-float32-first"),
])
def test_neighbours_are_silent(tmp_path, body):
    assert _rows(tmp_path, body) == []


def test_the_message_names_the_dtype_and_the_replacement(tmp_path):
    body = ("a = torch.zeros(1, dtype=torch.float64, device=device)\n"
            "b = torch.zeros(1, dtype=torch.complex128, device=device)\n")
    found = sorted(findings(tmp_path, HEAD + body, codes=["CUD601"]),
                   key=lambda f: f.location.row)
    assert [f.message for f in found] == [
        "float64 tensor on a device: MPS has no float64 and raises there; use torch.float32",
        "complex128 tensor on a device: MPS has no complex128 and raises there; "
        "use torch.complex64"]


HELPER = ("import numpy as np\nimport torch\n\nSCHEDULE = np.linspace(1e-4, 0.02, 1000)\n\n\n"
          "def _extract(arr, timesteps):\n"
          "    return torch.from_numpy(arr).to(device=timesteps.device)[timesteps]\n\n\n")


@pytest.mark.parametrize(("caller", "passed"), [
    pytest.param("def sample(t):\n    return _extract(SCHEDULE, t)\n", "SCHEDULE",
                 id="module-level-table"),
    pytest.param("def sample(t):\n    return _extract(timesteps=t, arr=np.ones(3) * 2)\n",
                 "np.ones(3) * 2", id="keyword-arguments"),
    pytest.param("def sample(t, xs):\n    batch = [np.random.rand(3) for _ in xs]\n"
                 "    return _extract(np.stack(batch), t)\n", "np.stack(batch)",
                 id="stacked-in-the-caller"),
    pytest.param("class D:\n    def __init__(self):\n        self.a = SCHEDULE.copy()\n\n"
                 "    def setup(self):\n        self.b = np.sqrt(self.a)\n\n"
                 "    def step(self, t):\n        return _extract(self.b, t)\n", "self.b",
                 id="derived-in-another-method"),
])
def test_a_float64_array_passed_to_a_function_that_moves_it(tmp_path, caller, passed):
    found = findings(tmp_path, HELPER + caller, codes=["CUD601"])
    assert [(f.location.row, f.location.column, str(f.severity)) for f in found] == [
        (8, 12, "error")]
    assert f"(`{passed}`, line " in found[0].message


@pytest.mark.parametrize("caller", [
    pytest.param("def sample(t):\n    return _extract(SCHEDULE.astype(np.float32), t)\n",
                 id="cast-by-the-caller"),
    pytest.param("def sample(t, arr):\n    return _extract(arr, t)\n", id="unknown-array"),
    pytest.param("def sample(t, args):\n    return _extract(*args)\n", id="starred"),
    pytest.param("class D:\n    def _extract(self, arr, t):\n        return arr\n\n"
                 "    def step(self, t):\n        return self._extract(SCHEDULE, t)\n",
                 id="a-method-of-the-same-name"),
    pytest.param("def sample(t):\n    print('_extract(SCHEDULE, t) moves float64')\n"
                 "    return t\n", id="prose"),
])
def test_neighbours_of_a_float64_argument_are_silent(tmp_path, caller):
    assert findings(tmp_path, HELPER + caller, codes=["CUD601"]) == []


def test_only_a_module_level_function_is_followed_from_its_callers(tmp_path):
    source = ("import numpy as np\nimport torch\n\n\nclass D:\n"
              "    def extract(self, arr, t):\n"
              "        return torch.from_numpy(arr).to(t.device)[t]\n\n"
              "    def step(self, t):\n        return self.extract(np.ones(3), t)\n\n\n"
              "def outer(t):\n    def inner(arr):\n"
              "        return torch.from_numpy(arr).to(t.device)\n"
              "    return inner(np.ones(3))\n")
    assert findings(tmp_path, source, codes=["CUD601"]) == []


# A rollout buffer keeping its arrays on `self`: `__init__` makes them (naming no term of the
# rule but numpy's `np`, so the first pass may leave it unread), `get` moves them.
BUFFER = '''\
"""Rollout storage for PPO."""
import numpy as np
import torch


class RolloutBuffer:
    def __init__(self, size, obs_dim, frames):
        self.obs = np.zeros((size, obs_dim), dtype=np.float32)
        self.rew = np.empty(size)
        self.ret = np.zeros(size)
        self.frames = np.stack([np.random.rand(obs_dim) for _ in frames])
        self.raw = np.stack(frames)
        self.logp = np.zeros(size, dtype=np.float32)
        self.val = np.zeros(size)
        self.adv = np.zeros(size, dtype=np.float32)
        self.ptr = 0

    def store(self, obs, rew, logp):
        self.obs[self.ptr] = obs
        self.rew[self.ptr] = rew
        self.logp[self.ptr] = logp
        self.ptr += 1

    def reset(self, size):
        self.val = np.zeros(size, dtype=np.float32)
        self.ptr = 0

    def finish_path(self, gamma=0.99):
        running = 0.0
        for t in reversed(range(self.ptr)):
            running = self.rew[t] + gamma * running
            self.ret[t] = running

    def get(self, device):
        rew = torch.from_numpy(self.rew).to(device)
        ret = torch.from_numpy(self.ret[: self.ptr]).to(device)
        frames = self.frames
        frames = torch.from_numpy(frames).to(device, non_blocking=True)
        val = torch.from_numpy(self.val).to(device)
        obs = torch.from_numpy(self.obs).to(device)
        adv = torch.from_numpy(self.adv).to(device)
        raw = torch.from_numpy(self.raw).to(device)
        logp = torch.from_numpy(self.logp).float().to(device)
        rew32 = torch.from_numpy(self.rew).float().to(device)
        ret_cpu = torch.from_numpy(self.ret)
        return rew, ret, frames, val, obs, adv, raw, logp, rew32, ret_cpu
'''


def test_a_float64_array_kept_on_self_and_moved(tmp_path):
    """`self.rew`, `self.ret` (sliced), `self.frames` (stacked float64, through a local) are
    float64 where `get` moves them, as a local array would be; `self.val` too, since
    `__init__` makes it float64 before `reset` makes it float32 (any assignment, as for an
    array kept on `self` and passed to a function that moves it). Silent: the float32 arrays,
    a stack of arrays of unknown dtype (`self.raw`), `.float()` before the move, and an array
    that stays on the CPU."""
    found = findings(tmp_path, BUFFER, codes=["CUD601"])
    assert codes_at(found) == [("CUD601", 35, 15), ("CUD601", 36, 15), ("CUD601", 38, 18),
                               ("CUD601", 39, 15)]
    local = findings(tmp_path, "import numpy as np\nimport torch\n\n\ndef get(device):\n"
                     "    rew = np.zeros(3)\n    return torch.from_numpy(rew).to(device)\n",
                     codes=["CUD601"])
    assert {f.message for f in found} == {local[0].message}


def test_a_float64_attribute_is_read_in_its_own_class_only(tmp_path):
    """`self.rew` of another class is not this method's."""
    source = ("import numpy as np\nimport torch\n\n\nclass Raw:\n    def __init__(self):\n"
              "        self.rew = np.zeros(3)\n\n\nclass Buffer:\n    def __init__(self):\n"
              "        self.rew = np.zeros(3, dtype=np.float32)\n\n"
              "    def get(self, device):\n        return torch.from_numpy(self.rew).to(device)\n")
    assert findings(tmp_path, source, codes=["CUD601"]) == []
    explicit = source.replace("np.zeros(3, dtype=np.float32)",
                              "np.array([0.0] * 3, dtype=np.float64)")
    assert codes_at(findings(tmp_path, explicit, codes=["CUD601"])) == [("CUD601", 15, 16)]


def test_an_unread_init_still_tells_the_attribute_float64():
    """The first pass gives LibCST `get` (it names `from_numpy` and `.to(`) but not
    `__init__`, which names only `np`: the arrays it keeps are read from the whole text, and
    the findings are those of a check reading the whole file."""
    rules = tuple(rule for rule in all_rules() if rule.code == "CUD601")
    settings = Settings(target_torch=(2, 13))
    prefilter = Prefilter.for_rules(rules, settings)
    sparse = lint_python(BUFFER.encode(), Path("storage.py"), rules, settings,
                         prefilter=prefilter)
    whole = lint_python(BUFFER.encode(), Path("storage.py"), rules, settings,
                        prefilter=prefilter, sparse=False)
    assert sparse.module is not None
    assert "self.ret = np.zeros(size)" not in sparse.module.code
    assert "torch.from_numpy(self.ret[: self.ptr])" in sparse.module.code
    assert [f.location.row for f in sparse.findings] == [35, 36, 38, 39]
    assert sparse.findings == whole.findings

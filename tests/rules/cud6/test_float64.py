"""CUD601 (float64 on a device): the spellings that put a float64 (or complex128) tensor on a
device MPS cannot hold it on, and their neighbours that must stay silent (prose, dict keys,
`x.dtype` comparisons, float64 kept on the CPU)."""

from __future__ import annotations

import pytest

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

"""CUD114: a name bound only under a CUDA check, read after it."""

from __future__ import annotations

from tests.lint import codes_at, findings


def _at(tmp_path, source: str) -> list[tuple[str | None, int, int]]:
    return codes_at(findings(tmp_path, source, codes=["CUD114"]))


def test_the_first_unguarded_read_after_the_check(tmp_path):
    source = (
        "import torch\n"
        "\n"
        "def main(args):\n"
        "    if torch.cuda.is_available():\n"
        "        n_gpus = torch.cuda.device_count()\n"
        "        print(f'{n_gpus} GPUs')\n"  # inside the guard
        "    if torch.cuda.is_available():\n"
        "        print(n_gpus)\n"  # under the same check later
        "    world = n_gpus * args.nodes\n"  # the first unguarded read
        "    return [r for r in range(n_gpus)], world\n"
    )
    found = findings(tmp_path, source, codes=["CUD114"])
    assert codes_at(found) == [("CUD114", 9, 13)]
    assert str(found[0].severity) == "error"
    assert not found[0].guarded
    assert "UnboundLocalError" in found[0].message


def test_an_early_exit_without_cuda_guards_the_reads_after_it(tmp_path):
    assert _at(tmp_path, (
        "import torch\n\ndef main():\n    if torch.cuda.is_available():\n"
        "        n = torch.cuda.device_count()\n    if not torch.cuda.is_available():\n"
        "        return\n    print(n)\n"
    )) == []


def test_names_that_are_not_reads(tmp_path):
    assert _at(tmp_path, (
        "import torch\n\ndef main(cfg):\n    if torch.cuda.is_available():\n"
        "        n = torch.cuda.device_count()\n    report(n=3)\n    print(cfg.n, 'n')\n"
        "    def later():\n        return n\n    return later\n"
    )) == []


def test_a_binding_anywhere_else_in_the_function_or_a_global(tmp_path):
    assert _at(tmp_path, (
        "import torch\n\ndef main(n):\n    if torch.cuda.is_available():\n"
        "        n = torch.cuda.device_count()\n    return n\n\n"
        "def other():\n    global COUNT\n    if torch.cuda.is_available():\n"
        "        COUNT = torch.cuda.device_count()\n    return COUNT\n\n"
        "def loop(items):\n    for k in items:\n        if torch.cuda.is_available():\n"
        "            k = k.cuda()\n        use(k)\n"
    )) == []


def test_other_elif_tests_and_a_guarded_if(tmp_path):
    assert _at(tmp_path, (
        "import torch\n\ndef main(args):\n    if torch.cuda.is_available():\n"
        "        n = torch.cuda.device_count()\n    elif args.cpu:\n        n = 0\n"
        "    return n\n\n"
        "def guarded():\n    if not torch.cuda.is_available():\n        return 0\n"
        "    if torch.cuda.device_count() > 1:\n        extra = 1\n    return extra\n"
    )) == []


def test_an_else_that_binds_nothing_and_falls_through(tmp_path):
    assert _at(tmp_path, (
        "import torch\n\ndef main():\n    if torch.cuda.is_available():\n"
        "        n = torch.cuda.device_count()\n    else:\n        print('no GPU')\n"
        "    return n\n"
    )) == [("CUD114", 8, 12)]


def test_module_level_read_is_a_name_error(tmp_path):
    found = findings(tmp_path, (
        "import torch\nHAS_GPU = torch.cuda.is_available()\nif HAS_GPU:\n"
        "    DEVICE_NAME = torch.cuda.get_device_name(0)\n"
        "print(DEVICE_NAME)\n"
    ), codes=["CUD114"])
    assert codes_at(found) == [("CUD114", 5, 7)]
    assert "NameError" in found[0].message


# A launcher counting the devices of whichever accelerator it finds (issue 41): on a Mac
# neither the CUDA nor the XPU branch runs.
ACCELERATORS = '''import torch


def world_size():
    if torch.cuda.is_available():
        n = torch.cuda.device_count()
    if torch.xpu.is_available():
        n = torch.xpu.device_count()
    return list(range(n))


def world_size_with_mps():
    if torch.cuda.is_available():
        n = torch.cuda.device_count()
    if torch.backends.mps.is_available():
        n = 1
    return list(range(n))


def world_size_with_default():
    if torch.cuda.is_available():
        n = torch.cuda.device_count()
    if torch.xpu.is_available():
        n = torch.xpu.device_count()
    else:
        n = 1
    return list(range(n))


def world_size_elif():
    if torch.cuda.is_available():
        n = torch.cuda.device_count()
    elif torch.xpu.is_available():
        n = torch.xpu.device_count()
    print("n is the device count")
    return list(range(n))
'''


def test_a_name_bound_under_cuda_and_another_accelerator_a_mac_lacks(tmp_path):
    # the separate `if` and the `elif` of XPU leave it unbound on a Mac; MPS or an `else`
    # binds it there
    assert _at(tmp_path, ACCELERATORS) == [("CUD114", 9, 23), ("CUD114", 36, 23)]

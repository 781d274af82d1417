"""Where a finding lives: main, distributed-only, guarded, tooling."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cudalint.finding import Finding, Position
from cudalint.report.paths import PathClass, classify, distributed_test

FIXTURES = Path(__file__).parents[2] / "fixtures" / "report"


@pytest.mark.parametrize(("test", "expected"), [
    ("ddp", True),
    ("not ddp", False),
    ("args.distributed", True),
    ("self.is_distributed", True),
    ("world_size > 1", True),
    ("world_size == 1", False),
    ("int(os.environ.get('WORLD_SIZE', 1)) > 1", True),
    ("int(os.environ['RANK']) != -1", True),
    ("local_rank == -1", False),
    ("'LOCAL_RANK' in os.environ", True),
    ("'LOCAL_RANK' not in os.environ", False),
    ("dist.is_initialized()", True),
    ("ddp and master_process", True),
    ("not ddp or debug", False),
    # Not about distribution: a single-device run takes these branches too.
    ("rank == 0", None),
    ("master_process", None),
    ("torch.cuda.is_available()", None),
    ("input.is_cuda", None),
    ("step % 10 == 0", None),
    ("distributed_sampler is None", None),
])
def test_distributed_tests(test: str, expected: bool | None) -> None:
    assert distributed_test(ast.parse(test, mode="eval").body) is expected


def _finding(path: Path, row: int, code: str = "CUD101", guarded: bool = False) -> Finding:
    return Finding(code, "m", path, Position(row, 1), Position(row, 2), guarded=guarded)


def test_branches_of_a_training_script(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import os\n"                                       # 1
        "ddp = int(os.environ.get('RANK', -1)) != -1\n"     # 2
        "if ddp:\n"                                         # 3
        "    device = 'cuda:0'\n"                           # 4
        "else:\n"                                           # 5
        "    device = 'cuda'\n"                             # 6
        "if not ddp:\n"                                     # 7
        "    print('single')\n"                             # 8
        "else:\n"                                           # 9
        "    init_process_group('nccl')\n"                  # 10
        "def setup_ddp(rank):\n"                            # 11
        "    torch.cuda.set_device(rank)\n"                 # 12
        "def train():\n"                                    # 13
        "    model.cuda()\n"                                # 14
        "    if torch.cuda.is_available():\n"               # 15
        "        torch.cuda.synchronize()\n"                # 16
    )
    classes = {row: classify(_finding(script, row, guarded=row == 16))
               for row in (4, 6, 8, 10, 12, 14, 16)}
    assert classes == {4: PathClass.DISTRIBUTED, 6: PathClass.MAIN, 8: PathClass.MAIN,
                       10: PathClass.DISTRIBUTED, 12: PathClass.DISTRIBUTED, 14: PathClass.MAIN,
                       16: PathClass.GUARDED}


def test_scripts_pins_and_launchers() -> None:
    dual = FIXTURES / "dual_track"
    launcher = _finding(dual / "scripts" / "launch_multi_gpu.sh", 3, "CUD502")
    pin = _finding(dual / "requirements.txt", 1, "CUD402")
    env_in_python = _finding(FIXTURES / "ready" / "train.py", 1, "CUD502")
    assert classify(launcher) is PathClass.DISTRIBUTED  # it runs torchrun
    assert classify(pin) is PathClass.TOOLING
    assert classify(env_in_python) is PathClass.TOOLING

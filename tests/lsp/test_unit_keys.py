"""The parts of a unit's key read from `ast`: the statement walk misses no assignment, import or
declaration that a full walk finds."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cudalint.lsp.unit_keys import statements

ROOT = Path(__file__).resolve().parents[2]
KINDS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.Global,
         ast.Nonlocal)
EVERY_BLOCK = '''
def train(loader, device):
    try:
        import apex
    except ImportError:
        amp = None
    else:
        amp = apex.amp
    finally:
        done = False
    match device:
        case "cuda":
            backend = "nccl"
        case _:
            backend: str = "gloo"
    with open("log") as log:
        for batch in loader:
            while batch is None:
                if log:
                    global STEP
                else:
                    STEP += 1
    async def prefetch():
        async with lock:
            async for item in queue:
                nonlocal done
                done = item.cuda() if torch.cuda.is_available() else item
    values = [x for x in loader if (last := x)]
    return lambda: backend
'''


def found_by(walk: object, source: str) -> list[tuple[str, int]]:
    tree = ast.parse(source)
    nodes = ast.walk(tree) if walk is ast.walk else (
        n for top in tree.body for n in statements(top))
    return sorted((type(n).__name__, n.lineno) for n in nodes if isinstance(n, KINDS))


@pytest.mark.parametrize("path", ["every-block", *sorted((ROOT / "fixtures").rglob("*.py"))],
                         ids=str)
def test_the_statement_walk_finds_what_a_full_walk_finds(path: str | Path) -> None:
    source = EVERY_BLOCK if path == "every-block" else Path(path).read_text(encoding="utf-8")
    full = found_by(ast.walk, source)
    assert found_by(statements, source) == full
    if path == "every-block":
        assert len(full) == 11

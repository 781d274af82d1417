"""Where a finding lives: the main single-device path, a distributed-only path, a guarded or
optional path, or tooling (pins, containers, cluster and launch scripts).

A Python finding is distributed-only when it sits in the branch of an `if` that only a
distributed run takes (`if ddp:`, `if world_size > 1:`, `if args.distributed:`,
`if "LOCAL_RANK" in os.environ:`, the `else` of `if not ddp:`), or in a function named for it
(`setup_ddp`, `init_distributed`). A finding in a launch script that runs `torchrun` is
distributed-only too; other non-Python files are tooling.
"""

from __future__ import annotations

import ast
import enum
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from cudalint.config import DEFAULT_MAX_FILE_SIZE
from cudalint.files import read_text
from cudalint.finding import Finding

# Families about the environment around the code, wherever they are found.
_TOOLING_FAMILIES = ("CUD4", "CUD5")
# Names that stand for "this is a distributed run" when tested for truth.
_FLAG = re.compile(
    r"^(?:is_|use_|using_)?(?:ddp|fsdp|distributed|multi_gpu|multigpu)(?:_run|_mode)?$",
    re.IGNORECASE)
_WORLD = re.compile(r"world_size|num_gpus|ngpus|n_gpus|nprocs|gpus_per_node", re.IGNORECASE)
_RANK = re.compile(r"^(?:ddp_|local_|global_)?rank$", re.IGNORECASE)
_RANK_VARS = frozenset({"RANK", "LOCAL_RANK", "WORLD_SIZE"})
_DIST_CALLS = frozenset({"is_initialized", "is_available", "is_torchelastic_launched"})
_DIST_FUNCTION = re.compile(r"ddp|fsdp|distributed|(?:^|_)dist(?:_|$)", re.IGNORECASE)
_LAUNCHERS = re.compile(r"\btorchrun\b|torch\.distributed\.(?:launch|run)\b|--nproc[_-]per[_-]node")


class PathClass(str, enum.Enum):
    MAIN = "main"
    DISTRIBUTED = "distributed"
    GUARDED = "guarded"
    TOOLING = "tooling"


def classify(finding: Finding) -> PathClass:
    code = finding.code or ""
    path = Path(finding.path)
    if path.suffix != ".py":
        return PathClass.DISTRIBUTED if _launches_distributed(path) else PathClass.TOOLING
    if _in_distributed_branch(path, finding.location.row):
        return PathClass.DISTRIBUTED
    if code.startswith(_TOOLING_FAMILIES):
        return PathClass.TOOLING
    return PathClass.GUARDED if finding.guarded else PathClass.MAIN


def _launches_distributed(path: Path) -> bool:
    return bool(_LAUNCHERS.search(read_source(path)))


def _in_distributed_branch(path: Path, row: int) -> bool:
    return any(start <= row <= end for start, end in distributed_ranges(path))


def read_source(path: Path) -> str:
    """The file's text, read as `check` reads a file: a regular file within the size limit
    (never a FIFO or a device named like a source); "" for any other."""
    return read_text(path, DEFAULT_MAX_FILE_SIZE) or ""


def distributed_ranges(path: Path) -> tuple[tuple[int, int], ...]:
    """The line ranges of `path` that only a distributed run executes."""
    return _ranges_in(read_source(path))


@lru_cache(maxsize=256)
def _ranges_in(source: str) -> tuple[tuple[int, int], ...]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    return tuple(_ranges(tree))


def _ranges(tree: ast.AST) -> Iterator[tuple[int, int]]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _DIST_FUNCTION.search(
                node.name):
            yield node.lineno, node.end_lineno or node.lineno
        elif isinstance(node, ast.If):
            yield from _branch(node)


def _branch(node: ast.If) -> Iterator[tuple[int, int]]:
    polarity = distributed_test(node.test)
    if polarity is True:
        yield node.lineno, node.body[-1].end_lineno or node.lineno
    elif polarity is False and node.orelse:
        yield node.orelse[0].lineno, node.orelse[-1].end_lineno or node.lineno


def distributed_test(test: ast.expr) -> bool | None:
    """True when the test holds only in a distributed run, False when it holds only outside
    one (so its `else` is the distributed branch), None when it says nothing about it."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = distributed_test(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        parts = [distributed_test(value) for value in test.values]
        if isinstance(test.op, ast.And) and True in parts:
            return True
        return False if isinstance(test.op, ast.Or) and False in parts else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        return _comparison(test.left, test.ops[0], test.comparators[0])
    if isinstance(test, ast.Call):
        return True if _name(test.func).rpartition(".")[2] in _DIST_CALLS and "dist" in _name(
            test.func) else None
    return True if _FLAG.match(_name(test).rpartition(".")[2]) else None


def _comparison(left: ast.expr, op: ast.cmpop, right: ast.expr) -> bool | None:
    if isinstance(op, (ast.In, ast.NotIn)) and _constant(left) in _RANK_VARS:
        return isinstance(op, ast.In)
    subject = _name(left).rpartition(".")[2] or _environ_key(left)
    value = _constant(right)
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if _WORLD.search(subject) or subject == "WORLD_SIZE":
        return _above(op, value, 1)
    if _RANK.match(subject) or subject in ("RANK", "LOCAL_RANK"):
        return _above(op, value, -1)
    return None


def _above(op: ast.cmpop, value: int, single: int) -> bool | None:
    """For `x OP value` where `single` is x's value outside a distributed run."""
    if isinstance(op, (ast.Gt, ast.NotEq)) and value == single:
        return True
    if isinstance(op, ast.GtE) and value == single + 1:
        return True
    if isinstance(op, (ast.Eq, ast.LtE)) and value == single:
        return False
    if isinstance(op, ast.Lt) and value == single + 1:
        return False
    return None


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    if isinstance(node, ast.Call) and node.args:
        # `int(os.environ.get("WORLD_SIZE", 1))`: the key names the subject.
        return _environ_key(node.args[0]) or _name(node.args[0])
    return ""


def _environ_key(node: ast.expr) -> str:
    if isinstance(node, ast.Call) and node.args and _name(node.func).endswith(
            ("environ.get", "getenv")):
        key = _constant(node.args[0])
        return key if isinstance(key, str) else ""
    if isinstance(node, ast.Subscript) and _name(node.value).endswith("environ"):
        key = _constant(node.slice)
        return key if isinstance(key, str) else ""
    return ""


def _constant(node: ast.expr) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(
            node.operand, ast.Constant) and isinstance(node.operand.value, int):
        return -node.operand.value
    return None

"""No test asserts a wall-clock limit: on a loaded machine (CI's, or 2 cores shared by several
runs) any such limit fails at random. What must be fast is asserted by counting work (files
read, parses, calls, the delay a task is scheduled with), or measured in benchmarks/."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = frozenset({"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns",
                    "time_ns"})


def _reads_a_clock(node: ast.AST) -> bool:
    return any(isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
               and call.func.attr in CLOCKS and isinstance(call.func.value, ast.Name)
               and call.func.value.id == "time"
               for call in ast.walk(node))


def _measures(node: ast.AST) -> bool:
    """Whether the expression holds a difference of clock readings (a duration)."""
    return any(isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub) and _reads_a_clock(sub)
               for sub in ast.walk(node))


def _durations(tree: ast.AST) -> set[str]:
    """The names bound anywhere in the module to a difference of clock readings."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) \
                and node.value is not None and _measures(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(name.id for target in targets for name in ast.walk(target)
                         if isinstance(name, ast.Name))
    return names


def timed_assertions(source: str) -> list[int]:
    """The lines of the assertions that compare a duration (a clock difference, or a name
    bound to one) with anything."""
    tree = ast.parse(source)
    durations = _durations(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        for compare in ast.walk(node.test):
            if not isinstance(compare, ast.Compare):
                continue
            operands = [compare.left, *compare.comparators]
            if any(_measures(operand) or any(
                    isinstance(name, ast.Name) and name.id in durations
                    for name in ast.walk(operand)) for operand in operands):
                found.append(node.lineno)
                break
    return found


def test_no_test_compares_a_duration_with_a_limit() -> None:
    found = [f"{path.relative_to(TESTS.parent)}:{line}"
             for path in sorted(TESTS.rglob("*.py"))
             for line in timed_assertions(path.read_text(encoding="utf-8"))]
    assert not found, "assert a count of work instead (or move it to benchmarks/):\n" + \
        "\n".join(found)


def test_the_check_sees_each_spelling() -> None:
    assert timed_assertions(  # (split so that a grep of the tests for such asserts skips it)
        "import time\nstart = time.monotonic()\nassert time.monotonic()"
        " - start < 1.5\n") == [3]
    assert timed_assertions(
        "import time\ns = time.perf_counter()\nelapsed = time.perf_counter() - s\n"
        "assert code == 0\nassert elapsed < 60\n") == [5]
    assert timed_assertions(
        "import time\ndef f():\n    t = time.time()\n    took = time.time() - t\n"
        "    return took\nc, took = f()\nassert took <= LIMIT\n") == [7]
    assert timed_assertions(  # a deadline to stop waiting (a hang) is no duration
        "import time\ndeadline = time.monotonic() + 20\n"
        "while time.monotonic() < deadline:\n    pass\n"
        "assert time.monotonic() < deadline, 'hung'\n") == []

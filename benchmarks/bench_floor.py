"""How far down this design's cold check can go: the least CPU a check built as cudalint's is
(an `ast` first pass choosing what LibCST reads, then the rules' walk over LibCST's tree) could
spend on a tree, beside ruff's CPU seconds on it in the same run (issue 46's limit: 2.5x).

    python benchmarks/bench_floor.py [--target DIR] [--jobs N]

It takes, in one run:
- the phases of a cold check (bench_phases.py's timers), and ruff's CPU seconds;
- a second check, untimed, that notes what LibCST reads of each file (its lines of code, not
  the folded units nor the blank and comment lines) and how much of that lies in a function,
  method or top-level statement holding a finding: what a perfect pre-screen, which knew the
  findings before reading anything, would still have LibCST read. Lines are a poor measure
  of LibCST's work (an import line costs it a fraction of an expression's), so the check also
  times LibCST's parse of each file as it reads it, and again with every holder of no finding
  blanked as well: the share of the parse a perfect pre-screen keeps;
- CPython's parser alone (`_symtable`, which makes no Python object of a node) over every file
  checked: the least a first pass can spend that tells a syntax error from valid code, as
  cudalint does in every file.

The floor is then: the term search, CPython's parser alone, the LibCST phases (parse, walk,
positions) scaled by the share of the parse a perfect pre-screen keeps, and the rest of the
work as measured. A floor at or above the limit says that no pre-screen, however sharp,
reaches it in this design.
"""

from __future__ import annotations

import _symtable
import ast
import contextlib
import gc
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_phases import check_quietly, footer, ratio, target_and_jobs, timed

# The phases whose work grows with what LibCST reads.
LIBCST_PHASES = ("LibCST's parse", "the rules' walk", "positions, noqa, messages")
FIRST_PASS = ("term search (all files)", "Python's parse (ast, lazy)",
              "what LibCST need not read")


def code_lines(lines: list[bytes], rows: range) -> set[int]:
    """The rows (1-based) of `rows` that hold code: not blank, not a comment alone."""
    return {row for row in rows
            if (text := lines[row - 1].strip()) and not text.startswith(b"#")}


def holders(tree: Any, data: bytes) -> list[range]:
    """Where a finding's holder may be, innermost first: the functions, methods and classes
    without methods (cudalint.engine.first_pass.sparse.leaves), then the top-level
    statements."""
    from cudalint.engine.first_pass.sparse import first_line, leaves, units_of

    units = [range(unit.first, unit.last + 1) for unit in leaves(units_of(data, tree))]
    statements = [range(first_line(node), node.end_lineno + 1) for node in tree.body]
    return units + statements


class Reads:
    """Each main lint's share of LibCST's work that a perfect pre-screen keeps, summed in this
    process and written to `folder` after each file (a forked worker ends without running
    atexit): the lines of code LibCST read and those in a holder of a finding; and LibCST's
    parse of the file as the check reads it, timed beside its parse with every holder of no
    finding blanked too (all of them; the functions and methods alone; the other top-level
    statements alone)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.record: dict[str, Any] = {"read": 0, "needed": 0, "paths": [],
                                       **dict.fromkeys(PARSES, 0.0)}
        self.parts: tuple[bytes, Any, Any] | None = None
        self.depth = 0
        self.simulating = False

    def install(self) -> None:
        import cudalint.engine.checkers.python as checker
        import cudalint.engine.lint.python as lint

        hidden, linted, fixed = lint._hidden, lint.lint_python, checker._fixed

        def recorded(source: bytes, tree: Any, *args: Any) -> Any:
            parts = hidden(source, tree, *args)
            if self.depth == 1 and not self.simulating:
                self.parts = (source, tree, parts)
            return parts

        def lint_python(data: bytes, path: Path, *args: Any, **kwargs: Any) -> Any:
            self.depth += 1
            if self.depth == 1:
                self.parts = None
            try:
                result = linted(data, path, *args, **kwargs)
            finally:
                self.depth -= 1
            if self.depth == 0 and not self.simulating:
                self.note(data, path, result)
            return result

        def simulation(*args: Any, **kwargs: Any) -> Any:
            self.simulating = True
            try:
                return fixed(*args, **kwargs)
            finally:
                self.simulating = False

        lint._hidden, lint.lint_python, checker._fixed = recorded, lint_python, simulation

    def note(self, data: bytes, path: Path, result: Any) -> None:
        import ast

        from cudalint.engine.reading.depth import BOM

        self.record["paths"].append(str(path))
        source = data.removeprefix(BOM)
        lines = source.splitlines()
        if self.parts is not None:
            source, tree, parts = self.parts
            if parts is None:  # nothing named: LibCST read nothing
                return self.save()
            hidden, runs = parts
        elif result.module is not None:  # read whole
            tree, hidden, runs = ast.parse(source), [], []
        else:
            return self.save()
        read = code_lines(lines, range(1, len(lines) + 1))
        for unit in hidden:
            read -= set(range(unit.first, unit.last + 1))
        for run in runs:
            read -= set(range(run.first + 1, run.last))
        needed: set[int] = set()
        spans = holders(tree, source)
        rows = {finding.location.row for finding in result.findings}
        for row in rows:
            span = next((span for span in spans if row in span), None)
            if span is not None:
                needed |= read & set(span)
        self.record["read"] += len(read)
        self.record["needed"] += len(needed)
        functions, statements = spare(tree, source, rows)
        for name, more in zip(PARSES, ([], functions + statements, functions, statements),
                              strict=True):
            self.record[name] += parse_seconds(source, [*hidden, *more], runs)
        return self.save()

    def save(self) -> None:
        (self.folder / f"{os.getpid()}.json").write_text(json.dumps(self.record))


# What holds a function's or class's findings (cudalint.engine.first_pass.sparse's units).
UNITS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# LibCST's parse of each file: as the check reads it; with every holder of no finding blanked
# too; with only the functions and methods of no finding; with only the other top-level
# statements of no finding.
PARSES = ("parse now", "parse kept", "parse without idle functions",
          "parse without idle statements")


def spare(tree: Any, source: bytes, rows: set[int]) -> tuple[list[Any], list[Any]]:
    """What a perfect pre-screen would blank besides what the check does: the functions,
    methods and classes without methods holding no finding (a class holding none, whole); and
    the other top-level statements holding none, alone on their lines."""
    from cudalint.engine.first_pass.sparse import Unit, first_line, leaves, units_of

    def idle(first: int, last: int) -> bool:
        return not any(first <= row <= last for row in rows)

    units = units_of(source, tree)
    functions = [unit for unit in units if idle(unit.first, unit.last)]
    functions += [leaf for unit in units if not idle(unit.first, unit.last)
                  for leaf in leaves([unit]) if leaf is not unit and idle(leaf.first, leaf.last)]
    body = tree.body
    statements = []
    for index, node in enumerate(body):
        first, last = first_line(node), node.end_lineno or node.lineno
        alone = (index == 0 or (body[index - 1].end_lineno or 0) < first) and \
            (index + 1 == len(body) or first_line(body[index + 1]) > last)
        if not isinstance(node, UNITS) and alone and idle(first, last):
            statements.append(Unit(first, last, b"", node))
    return functions, statements


def parse_seconds(source: bytes, blanked: list[Any], runs: list[Any]) -> float:
    """CPU seconds of LibCST's parse of `source` with `blanked` folded (the outermost of them)
    and the `runs` outside them, as the check reads a file (cudalint.engine.lint.python)."""
    from cudalint.engine.first_pass.runs import blank_runs
    from cudalint.engine.first_pass.sparse import blank
    from cudalint.engine.reading import trusted_parse

    outermost: list[Any] = []
    for unit in sorted(blanked, key=lambda unit: (unit.first, -unit.last)):
        if not outermost or unit.first > outermost[-1].last:
            outermost.append(unit)
    kept = [run for run in runs if not any(u.first <= run.first <= u.last for u in outermost)]
    text = blank_runs(blank(source, outermost), kept)
    collecting = gc.isenabled()
    gc.disable()  # as a check parses (cudalint.engine.running.collector)
    start = time.process_time()
    with contextlib.suppress(Exception):  # a file LibCST refuses costs what it cost
        trusted_parse.parse_module(text)
    seconds = time.process_time() - start
    if collecting:
        gc.enable()
    return seconds


def reads(target: Path, jobs: int) -> dict[str, Any]:
    """What LibCST reads in a cold check of `target`, and what a perfect pre-screen would
    leave it (`Reads`), summed over the workers; and the files checked."""
    with tempfile.TemporaryDirectory(prefix="bench_floor_") as folder:
        Reads(Path(folder)).install()
        check_quietly(target, jobs)
        records = [json.loads(path.read_text()) for path in Path(folder).glob("*.json")]
    summed = {name: sum(r[name] for r in records) for name in ("read", "needed", *PARSES)}
    return {**summed, "paths": [p for r in records for p in r["paths"]]}


def parser_alone(paths: list[str]) -> float:
    """CPU seconds of CPython's parser alone over `paths` (a file it refuses counts too)."""
    texts = [Path(path).read_bytes() for path in paths]
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for text in texts:
            with contextlib.suppress(SyntaxError, ValueError, RecursionError, MemoryError):
                _symtable.symtable(text, "<floor>", "exec")
    return time.process_time() - start


def floor(rows: dict[str, float], total: float, kept: float, parser: float) -> dict[str, float]:
    """The floor's parts: `rows`, the measured phases; `total`, the check's CPU seconds;
    `kept`, the share of LibCST's parse a perfect pre-screen keeps (the walk and the positions
    taken to shrink alike); `parser`, CPython's parser alone."""
    libcst = sum(rows[label] for label in LIBCST_PHASES)
    first = sum(rows[label] for label in FIRST_PASS)
    rest = total - libcst - first
    return {"term search": rows[FIRST_PASS[0]], "CPython's parser alone": parser,
            "LibCST phases, what a perfect pre-screen keeps": libcst * kept,
            "the rest, as measured": rest}


def main() -> int:
    chosen = target_and_jobs("bench_floor", __doc__.splitlines()[0])
    if chosen is None:
        return 2
    target, jobs = chosen
    reference, rows, total, _ = timed(target, jobs)
    seen = reads(target, jobs)
    now = seen["parse now"]
    kept = seen["parse kept"] / now if now else 0.0
    parts = floor(rows, total, kept, parser_alone(seen["paths"]))
    lowest = sum(parts.values())
    share = seen["needed"] / seen["read"] if seen["read"] else 0.0
    print(f"cold check of {target} ({len(seen['paths'])} Python files; "
          f"load average {os.getloadavg()[0]:.1f})")
    print(f"now: {total:.2f} CPU s, {ratio(total, reference)} ruff")
    print(f"LibCST reads {seen['read']} lines of code; {seen['needed']} ({share:.1%}) are in a "
          "function, method or top-level statement holding a finding")
    print(f"LibCST's parse of them, timed apart: {now:.2f} CPU s; of those holders alone "
          f"{seen['parse kept']:.2f} ({kept:.1%}); without the functions and methods holding "
          f"none {seen['parse without idle functions']:.2f}, without the other top-level "
          f"statements holding none {seen['parse without idle statements']:.2f}")
    print(f"{'the floor of this design':48} {'CPU s':>7} {'/ ruff':>8}")
    for name, seconds in parts.items():
        print(f"{name:48} {seconds:7.2f} {ratio(seconds, reference):>8}")
    print(f"{'all':48} {lowest:7.2f} {ratio(lowest, reference):>8}")
    return footer(reference)


if __name__ == "__main__":
    raise SystemExit(main())

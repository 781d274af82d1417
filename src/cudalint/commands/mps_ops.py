"""`cudalint mps-ops`: the ATen ops without an MPS kernel, and the Python calls reaching them."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn, TextIO

from cudalint.commands.help import HelpFormatter
from cudalint.mps_ops.coverage import (
    Coverage,
    InvalidTorchVersion,
    OpStatus,
    iter_missing,
    load_coverage,
    parse_torch_version,
    shipped_versions,
)

PROG = "cudalint mps-ops"


@dataclass(frozen=True)
class Row:
    op: str
    status: OpStatus
    cuda: bool
    fallback: str  # what PYTORCH_ENABLE_MPS_FALLBACK=1 changes
    calls: tuple[str, ...]
    backward_calls: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        return {
            "op": self.op,
            "status": self.status.value,
            "cuda": self.cuda,
            "rescued_by_fallback": self.fallback == _RESCUED,
            "calls": list(self.calls),
            "backward_calls": list(self.backward_calls),
        }


_RESCUED = "rescued"
_FALLBACK_TEXT = {
    OpStatus.NO_MPS: _RESCUED,
    OpStatus.ALWAYS_FALLBACK: "CPU already",
}


def _row(coverage: Coverage, op: str) -> Row:
    status = coverage.status(op)
    return Row(
        op=op,
        status=status,
        cuda=coverage.has_cuda(op),
        fallback=_FALLBACK_TEXT.get(status, "-"),
        calls=coverage.calls_reaching(op),
        backward_calls=coverage.calls_reaching(op, backward=True),
    )


def _rows_for(coverage: Coverage, name: str) -> list[Row] | None:
    """Rows for --op: a Python call's ops, or an op (a bare name: all its overloads)."""
    calls = coverage.call_variants(name) or tuple(filter(None, [coverage.call(name)]))
    if calls:
        ops = dict.fromkeys(op for info in calls for op in (*info.ops, *info.backward_ops))
        rows = [_row(coverage, op) for op in ops]
        return sorted(rows, key=lambda row: not row.status.missing)
    if coverage.status(name) is OpStatus.UNKNOWN:
        return None
    names = coverage.overloads(name) if "." not in name else ()
    return [_row(coverage, op) for op in (names or (name,))]


def _header(coverage: Coverage) -> str:
    if coverage.requested is None:
        return (f"torch is not installed: the newest shipped table, torch {coverage.version}, "
                f"is shown")
    if not coverage.exact:
        which = "nearest" if not _older_than_all(coverage.requested) else "oldest"
        return (f"no table for torch {coverage.requested}: the {which} shipped one, "
                f"torch {coverage.version}, is shown")
    return f"torch {coverage.version}"


def _older_than_all(requested: str) -> bool:
    return parse_torch_version(requested) < parse_torch_version(shipped_versions()[0])


_SHOWN_CALLS = 6  # the rest is in --json


def _calls_text(row: Row) -> str:
    calls = [*row.calls, *(f"{c} (backward)" for c in row.backward_calls)]
    more = len(calls) - _SHOWN_CALLS
    return ", ".join(calls[:_SHOWN_CALLS]) + (f", +{more} more" if more > 0 else "")


def _columns(row: Row) -> tuple[str, ...]:
    return (row.op, row.status.value, "yes" if row.cuda else "no", row.fallback,
            _calls_text(row))


_HEADINGS = ("op", "status", "cuda", "fallback", "reached from")


def _write_plain(rows: Sequence[Row], out: TextIO) -> None:
    table = [_HEADINGS, *(_columns(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(_HEADINGS) - 1)]
    for line in table:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        out.write("  ".join([*cells, line[-1]]).rstrip() + "\n")


def _write_rich(rows: Sequence[Row], title: str, out: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for heading in _HEADINGS:
        table.add_column(heading, overflow="fold")
    for row in rows:
        table.add_row(*_columns(row))
    Console(file=out).print(table)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line and exit 2, as every cudalint command."""
        self.exit(2, f"{PROG}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        formatter_class=HelpFormatter,
        description="List the ATen ops without an MPS kernel in a torch version, the Python "
                    "calls that reach them, and whether PYTORCH_ENABLE_MPS_FALLBACK=1 rescues "
                    "them.",
    )
    parser.add_argument("--target-torch", metavar="VERSION",
                        help="torch version to report on (default: the installed torch; "
                             f"tables ship for {', '.join(shipped_versions())})")
    parser.add_argument("--all", action="store_true", help="list every op, with an MPS kernel too")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--op", metavar="NAME",
                        help="one op (linalg_eig, aten::mode) or Python call "
                             "(torch.linalg.eigvals)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        coverage = load_coverage(args.target_torch)
    except InvalidTorchVersion as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    if args.op:
        found = _rows_for(coverage, args.op)
        if found is None:
            print(f"{PROG}: no op or call named {args.op!r} in the torch {coverage.version} "
                  f"table", file=sys.stderr)
            return 2
        rows = found
    else:
        names = coverage.ops() if args.all else tuple(iter_missing(coverage))
        rows = [_row(coverage, op) for op in names]
    try:
        _write(coverage, rows, args.json, sys.stdout)
    except BrokenPipeError:  # `| head`: stop quietly, and keep Python's exit flush from failing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _write(coverage: Coverage, rows: Sequence[Row], as_json: bool, out: TextIO) -> None:
    if as_json:
        if not coverage.exact:  # the JSON says `exact: false`; a person reads stderr
            print(f"{PROG}: {_header(coverage)}", file=sys.stderr)
        document = {
            "torch": coverage.version,
            "requested": coverage.requested,
            "exact": coverage.exact,
            "ops": [row.as_json() for row in rows],
        }
        out.write(json.dumps(document, indent=2) + "\n")
    elif out.isatty():
        _write_rich(rows, _header(coverage), out)
    else:
        out.write(_header(coverage) + "\n")
        _write_plain(rows, out)


if __name__ == "__main__":
    raise SystemExit(main())

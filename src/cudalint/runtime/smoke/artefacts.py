"""Files a target wrote and names in its output (a `pathlib.Path`, or a folder of them): read as
soon as the run returns, so a later run that writes the same path cannot change them.

Numeric files become tensors, compared within the tolerance like any output: `.npy`, `.npz`
(one leaf per array), `.pt`/`.pth` (loaded with `weights_only=True`), `.safetensors`, and a
`.csv`/`.tsv` whose cells are all numbers after an optional header row (integers as int64, any
other number as float32, the precision a model computes in; the header is compared as text).
Every other file, and a numeric one that does not read as such, is compared byte for byte
through its size and sha256. Each file's record (output, path, how it was compared, size,
sha256) goes into the report's `artefacts`."""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cudalint.files import ReadError, read_regular

NUMERIC_SUFFIXES = frozenset({".npy", ".npz", ".pt", ".pth", ".safetensors", ".csv", ".tsv"})
_MAX_FOLDER_FILES = 1000
MAX_ARTEFACT_SIZE = 1 << 31  # bytes of one output file compared (a checkpoint)


@dataclass(frozen=True)
class Artefact:
    output: str  # the output's name: `predictions`, `files['metrics.json']`
    path: str
    compared: str  # "numeric" or "bytes"
    size: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def artefact_records(files: list[Artefact],
                     reference: list[Artefact]) -> list[dict[str, Any]]:
    """The report's `artefacts`: each file of the run, with the sha256 of the file of the same
    output in the CPU reference run (None without one)."""
    theirs = {artefact.output: artefact.sha256 for artefact in reference}
    return [artefact.to_dict() | {"reference_sha256": theirs.get(artefact.output)}
            for artefact in files]


def read_artefacts(path: Path, name: str, walk: Callable[[Any, str], None],
                   records: list[Artefact] | None) -> None:
    """Hand `walk` what the file (or every file of the folder) at `path` holds, under `name`;
    note each file in `records`. OSError when a file cannot be read."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())[:_MAX_FOLDER_FILES]
        for file in files:
            read_artefacts(file, f"{name}[{file.relative_to(path).as_posix()!r}]", walk, records)
        return
    try:
        data = read_regular(path, MAX_ARTEFACT_SIZE)  # a FIFO is never waited on
    except ReadError as error:
        raise OSError(0, str(error).removeprefix("cannot read: ")) from None  # UnreadableFile
    digest = hashlib.sha256(data).hexdigest()
    value = _numeric(path, data)
    if records is not None:
        records.append(Artefact(name, str(path), "bytes" if value is None else "numeric",
                                len(data), digest))
    walk(f"{len(data)} bytes, sha256 {digest}" if value is None else value, name)


def _numeric(path: Path, data: bytes) -> Any:
    """What a numeric file holds (a tensor, or a dict of them), or None to compare its bytes."""
    suffix = path.suffix.lower()
    if suffix not in NUMERIC_SUFFIXES:
        return None
    try:
        if suffix in (".csv", ".tsv"):
            return _table(data, "\t" if suffix == ".tsv" else ",")
        return _load(suffix, data)
    except Exception:  # a file that does not read as its kind is compared byte for byte
        return None


def _load(suffix: str, data: bytes) -> Any:
    import numpy
    import torch

    if suffix == ".npy":
        return torch.from_numpy(numpy.load(io.BytesIO(data), allow_pickle=False))
    if suffix == ".npz":
        with numpy.load(io.BytesIO(data), allow_pickle=False) as arrays:
            return {key: torch.from_numpy(arrays[key]) for key in sorted(arrays.files)}
    if suffix == ".safetensors":
        from safetensors.torch import load

        return dict(sorted(load(data).items()))
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def _table(data: bytes, delimiter: str) -> Any:
    import torch

    rows = [row for row in csv.reader(io.StringIO(data.decode("utf-8")), delimiter=delimiter)
            if row]
    header = None
    if rows and not all(_is_number(cell) for cell in rows[0]):
        header, rows = rows[0], rows[1:]
    if not rows or len({len(row) for row in rows}) != 1:
        return None
    cells = [cell.strip() for row in rows for cell in row]
    if not all(_is_number(cell) for cell in cells):
        return None
    shape = (len(rows), len(rows[0]))
    if all(_is_number(cell, int) for cell in cells):
        values = torch.tensor([int(cell) for cell in cells], dtype=torch.int64).reshape(shape)
    else:
        values = torch.tensor([float(cell) for cell in cells], dtype=torch.float32).reshape(shape)
    return values if header is None else {"header": delimiter.join(header), "values": values}


def _is_number(cell: str, kind: type = float) -> bool:
    try:
        kind(cell)
    except ValueError:
        return False
    return True

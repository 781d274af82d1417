"""Compare two outputs leaf by leaf: structure, shapes, dtypes and values within tolerance."""

from __future__ import annotations

import cmath
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cudalint.runtime.smoke.outputs import Leaf

if TYPE_CHECKING:
    import torch

# (rtol, atol) per dtype, as torch.testing.assert_close chooses them; other dtypes are exact.
_DEFAULTS: dict[str, tuple[float, float]] = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


@dataclass(frozen=True)
class Tolerance:
    """User tolerances; where one is None, the dtype's default applies. `per_output` holds
    tolerances for some outputs (by name: `loss`, or `model` for every `model[...]` leaf); where
    one of those leaves a value None, this tolerance's value applies."""

    rtol: float | None = None
    atol: float | None = None
    per_output: Mapping[str, Tolerance] = field(default_factory=dict, hash=False)

    def for_path(self, path: str) -> Tolerance:
        """The tolerance for the output leaf `path`: the longest `per_output` name that is the
        path or a prefix of it up to `[` or `.`, over this one; else this one."""
        matching = [name for name in self.per_output
                    if path == name or path.startswith((f"{name}[", f"{name}."))]
        if not matching:
            return self
        own = self.per_output[max(matching, key=len)]
        return Tolerance(rtol=self.rtol if own.rtol is None else own.rtol,
                         atol=self.atol if own.atol is None else own.atol)

    def for_dtypes(self, *names: str) -> tuple[float, float]:
        """The looser default of the given dtypes, overridden by what the user set."""
        defaults = [_DEFAULTS.get(name, (0.0, 0.0)) for name in names]
        rtol = max(pair[0] for pair in defaults)
        atol = max(pair[1] for pair in defaults)
        return (rtol if self.rtol is None else self.rtol, atol if self.atol is None else self.atol)


EXACT = Tolerance(rtol=0.0, atol=0.0)


@dataclass(frozen=True)
class Difference:
    path: str
    reason: str  # missing, extra, kind, shape, dtype, values
    detail: str
    max_abs: float | None = None
    max_rel: float | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


def compare_outputs(
    actual: list[Leaf], expected: list[Leaf], tolerance: Tolerance
) -> list[Difference]:
    """Every way `actual` differs from `expected`; empty when they match."""
    found = {leaf.path: leaf for leaf in actual}
    wanted = {leaf.path: leaf for leaf in expected}
    problems = [Difference(path, "missing", "missing here, present in the reference")
                for path in wanted if path not in found]
    problems += [Difference(path, "extra", "present here, not in the reference")
                 for path in found if path not in wanted]
    for path, want in wanted.items():
        if path in found:
            problems += compare_leaf(found[path], want, tolerance.for_path(path))
    return problems


def compare_leaf(got: Leaf, want: Leaf, tolerance: Tolerance) -> list[Difference]:
    if got.kind != want.kind:
        return [Difference(got.path, "kind", f"a {got.kind} here, a {want.kind} in the reference")]
    if got.kind == "tensor":
        return _compare_tensors(got.path, got.value, want.value, tolerance)  # type: ignore[arg-type]
    if got.kind == "number":
        return _compare_numbers(got.path, got.value, want.value, tolerance)  # type: ignore[arg-type]
    if got.value != want.value:
        detail = f"{got.value!r} here, {want.value!r} in the reference"
        return [Difference(got.path, "values", detail)]
    return []


def dtype_name(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _compare_tensors(
    path: str, got: torch.Tensor, want: torch.Tensor, tolerance: Tolerance
) -> list[Difference]:
    if got.shape != want.shape:
        return [Difference(path, "shape", f"shape {tuple(got.shape)} here, "
                                          f"{tuple(want.shape)} in the reference")]
    problems = []
    if got.dtype != want.dtype:
        problems.append(Difference(path, "dtype", f"dtype {dtype_name(got)} here, "
                                                  f"{dtype_name(want)} in the reference"))
    rtol, atol = tolerance.for_dtypes(dtype_name(got), dtype_name(want))
    values = _value_difference(path, got, want, rtol, atol)
    return problems + ([values] if values else [])


def _widen(tensor: torch.Tensor, complex_: bool) -> torch.Tensor:
    import torch

    return tensor.to(torch.complex128 if complex_ else torch.float64)


def _value_difference(
    path: str, got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float
) -> Difference | None:
    import torch

    if got.numel() == 0:
        return None
    bad, diff, scale, nan_mismatch = _elementwise(got, want, rtol, atol)
    mismatched = int(bad.sum())
    if mismatched == 0:
        return None
    zero = torch.zeros((), dtype=torch.float64)
    max_abs = float(diff.max())
    max_rel = float(torch.where(diff == 0, zero, diff / scale).max())
    parts = [f"{mismatched} of {got.numel()} elements differ beyond rtol={rtol:g}, atol={atol:g}"]
    nans = int(nan_mismatch.sum())
    if nans < mismatched:  # some differ by a number, not only by a NaN on one side
        parts.append(f"max abs diff {max_abs:.4g} at {_where(got, want, diff)}, "
                     f"max rel diff {max_rel:.4g}")
    if nans:
        parts.append(f"NaN in one but not the other at {nans} elements, the first at "
                     f"{_where(got, want, nan_mismatch)}")
    return Difference(path, "values", "; ".join(parts), max_abs=max_abs, max_rel=max_rel)


def _where(got: torch.Tensor, want: torch.Tensor, by: torch.Tensor) -> str:
    """The index of `by`'s largest element (its first True), with both values there."""
    import torch

    flat = int(by.reshape(-1).to(torch.float64).argmax())
    index = [int(i) for i in torch.unravel_index(torch.tensor(flat), got.shape)]
    return f"{index} ({_item(got, flat)} vs {_item(want, flat)})"


def _elementwise(
    got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per element: out of tolerance, |got - want| (0 where equal or NaN), |want|, and NaN in
    one only."""
    import torch

    complex_ = got.dtype.is_complex or want.dtype.is_complex
    a, e = _widen(got, complex_), _widen(want, complex_)
    zero = torch.zeros((), dtype=torch.float64)
    if not (got.is_floating_point() or want.is_floating_point() or complex_):
        # Integers in their own dtypes: float64 would hide differences above 2**53.
        diff = (got.to(torch.int64) - want.to(torch.int64)).abs().to(torch.float64)
        return got != want, diff, e.abs(), torch.zeros(got.shape, dtype=torch.bool)
    nan_a, nan_e = torch.isnan(a), torch.isnan(e)
    equal = (a == e) | (nan_a & nan_e)
    diff = torch.where(equal | nan_a | nan_e, zero, (a - e).abs())
    bad = ~equal & ((nan_a ^ nan_e) | ~(diff <= atol + rtol * e.abs()))
    return bad, diff, e.abs(), nan_a ^ nan_e


def _item(tensor: torch.Tensor, flat: int) -> str:
    return f"{tensor.reshape(-1)[flat].item():.6g}"


def _compare_numbers(
    path: str, got: complex, want: complex, tolerance: Tolerance
) -> list[Difference]:
    exact = isinstance(got, int) and isinstance(want, int)
    if exact and got == want:
        return []
    rtol, atol = (0.0, 0.0) if exact else tolerance.for_dtypes(
        "complex128" if isinstance(got, complex) or isinstance(want, complex) else "float64")
    if _both_nan(got, want) or got == want:
        return []
    diff = abs(got - want)
    if not math.isnan(diff) and diff <= atol + rtol * abs(want):
        return []
    rel = diff / abs(want) if want else math.inf
    detail = (f"{got!r} here, {want!r} in the reference (abs diff {diff:.4g}, rel diff {rel:.4g}, "
              f"rtol={rtol:g}, atol={atol:g})")
    return [Difference(path, "values", detail, max_abs=diff, max_rel=rel)]


def _both_nan(got: complex, want: complex) -> bool:
    return cmath.isnan(got) and cmath.isnan(want)


def measure(actual: list[Leaf], expected: list[Leaf],
            tolerance: Tolerance) -> list[dict[str, object]]:
    """Each output both sides have: the rtol and atol applied to it (numbers, the per-dtype
    defaults included; None where it is compared exactly), its largest absolute and relative
    difference, and whether it is within the tolerance: the report's `differences`."""
    wanted = {leaf.path: leaf for leaf in expected}
    return [_measured(leaf, wanted[leaf.path], tolerance.for_path(leaf.path))
            for leaf in actual if leaf.path in wanted]


def _measured(got: Leaf, want: Leaf, tolerance: Tolerance) -> dict[str, object]:
    import torch

    row: dict[str, object] = {"output": got.path, "dtype": None, "rtol": None, "atol": None,
                              "max_abs": None, "max_rel": None,
                              "within": not compare_leaf(got, want, tolerance)}
    if got.kind == "tensor" and want.kind == "tensor":
        a, e = got.value, want.value
        assert isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor)
        rtol, atol = tolerance.for_dtypes(dtype_name(a), dtype_name(e))
        row.update(dtype=dtype_name(a), rtol=rtol, atol=atol)
        if a.shape == e.shape and a.numel():
            _, diff, scale, _ = _elementwise(a, e, rtol, atol)
            zero = torch.zeros((), dtype=torch.float64)
            row.update(max_abs=float(diff.max()),
                       max_rel=float(torch.where(diff == 0, zero, diff / scale).max()))
    elif got.kind == "number" and want.kind == "number":
        exact = isinstance(got.value, int) and isinstance(want.value, int)
        kind = "complex128" if isinstance(got.value, complex) else "float64"
        rtol, atol = (0.0, 0.0) if exact else tolerance.for_dtypes(kind)
        diff = abs(got.value - want.value)  # type: ignore[operator]
        row.update(dtype="int" if exact else kind, rtol=rtol, atol=atol,
                   max_abs=None if math.isnan(diff) else diff,
                   max_rel=(diff / abs(want.value) if want.value else None)  # type: ignore[arg-type]
                   if not math.isnan(diff) else None)
    row.update(max_abs=json_number(row["max_abs"]),  # type: ignore[arg-type]
               max_rel=json_number(row["max_rel"]))  # type: ignore[arg-type]
    return row


def json_number(value: float | None) -> float | str | None:
    """JSON has no NaN or infinity: those as text ('nan', 'inf', '-inf')."""
    if value is None or math.isfinite(value):
        return value
    return repr(value)


def summarize(problems: list[Difference], limit: int = 6) -> str:
    shown = "; ".join(str(problem) for problem in problems[:limit])
    more = len(problems) - limit
    return shown + (f"; and {more} more" if more > 0 else "")

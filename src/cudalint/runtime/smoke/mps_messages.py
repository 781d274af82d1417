"""Recognise what torch says on a Mac (warnings and errors) and name the op or dtype in it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cudalint.runtime.smoke.report import HazardKind

_FALLBACK = re.compile(
    r"The operator '(?P<op>[^']+)' is not currently supported on the MPS backend and will fall "
    r"back to run on the CPU"
)
_NOT_IMPLEMENTED = re.compile(
    r"The operator '(?P<op>[^']+)' is not currently implemented for the MPS device"
)
_FLOAT64 = re.compile(r"Cannot convert a MPS Tensor to float64 dtype")
_OTHER_DTYPE = re.compile(
    r"Trying to convert (?P<dtype>\w+) to the MPS backend but it does not have support for that "
    r"dtype"
)
_PIN_MEMORY = re.compile(r"'pin_memory' argument is set as true but not supported on MPS")

# c10::ScalarType names, as the messages print them, to torch dtype names.
_SCALAR_TYPES = {
    "Double": "float64",
    "ComplexDouble": "complex128",
    "ComplexFloat": "complex64",
    "ComplexHalf": "complex32",
    "UInt16": "uint16",
    "UInt32": "uint32",
    "UInt64": "uint64",
    "BFloat16": "bfloat16",
    "Half": "float16",
}


@dataclass(frozen=True)
class MpsMessage:
    kind: HazardKind
    op: str | None = None
    dtype: str | None = None


def parse_mps_message(text: str) -> MpsMessage | None:
    """The hazard a torch warning or error message on a Mac reports, or None for other text."""
    if match := _FALLBACK.search(text):
        return MpsMessage(HazardKind.CPU_FALLBACK, op=op_name(match["op"]))
    if match := _NOT_IMPLEMENTED.search(text):
        return MpsMessage(HazardKind.NO_MPS_KERNEL, op=op_name(match["op"]))
    if _FLOAT64.search(text):
        return MpsMessage(HazardKind.DTYPE, dtype="float64")
    if match := _OTHER_DTYPE.search(text):
        return MpsMessage(HazardKind.DTYPE, dtype=scalar_type_to_dtype(match["dtype"]))
    if _PIN_MEMORY.search(text):
        return MpsMessage(HazardKind.PIN_MEMORY)
    return None


def op_name(text: str) -> str:
    """`aten::linalg_eig` from `aten::linalg_eig`, `aten::linalg_eig.out`, `aten.linalg_eig.default`
    or `linalg_eig`."""
    name = text.strip()
    if "::" in name:
        namespace, _, rest = name.partition("::")
    elif "." in name:
        namespace, _, rest = name.partition(".")
    else:
        namespace, rest = "aten", name
    return f"{namespace}::{rest.partition('.')[0]}"


def scalar_type_to_dtype(name: str) -> str:
    if name in _SCALAR_TYPES:
        return _SCALAR_TYPES[name]
    return name.lower() if name.startswith("Float8") else name

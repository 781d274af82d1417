"""The table of CUDA-specific torch APIs (data/torch_cuda_api.toml): which rule reports each,
what it does off CUDA, and the portable replacement. Shared by CUD104-CUD110 and the guards."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from cudalint.finding import Applicability, Severity
from cudalint.rules import tables

OFF_CUDA = frozenset({"noop", "raises", "returns-none"})


@dataclass(frozen=True)
class CudaApi:
    name: str  # the qualified name of the entry ("torch.cuda.synchronize")
    code: str | None  # the reporting rule; None for probes and harmless names
    off_cuda: str
    severity: Severity
    message: str
    applicability: Applicability = Applicability.SAFE
    helper: str | None = None
    params: tuple[str, ...] = ()
    is_class: bool = False
    probe: bool = False
    dtype: str | None = None
    root: bool = False
    # CUD106
    portable: str | None = None
    device: str | None = None
    keywords: tuple[str, ...] = ()
    min_torch: tuple[int, int] = (0, 0)
    safe_from_torch: tuple[int, int] = (0, 0)

    @property
    def raises(self) -> bool:
        return self.off_cuda == "raises"

    def message_for(self, name: str) -> str:
        return self.message.replace("{name}", name)


@dataclass(frozen=True)
class DeviceTypeArgument:
    """Where a portable AMP API takes its device type (`torch.autocast("cuda")`)."""

    position: int | None
    keyword: str | None
    # The first torch whose API takes the device type "mps" (older ones raise `unsupported
    # autocast device_type 'mps'`): a fix passing `pick_device().type` is safe from there.
    safe_from_torch: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Table:
    apis: Mapping[str, CudaApi]
    aliases: Mapping[str, str]
    device_type_arguments: Mapping[str, DeviceTypeArgument]


@cache
def table() -> Table:
    data = tables.load("torch_cuda_api.toml")
    return Table(
        apis={name: _api(name, entry) for name, entry in data["api"].items()},
        aliases=dict(data.get("alias", {})),
        device_type_arguments={
            name: DeviceTypeArgument(entry.get("position"), entry.get("keyword"),
                                     _version(entry.get("safe_from_torch", "0.0")))
            for name, entry in data.get("device_type_argument", {}).items()
        },
    )


def _api(name: str, entry: dict[str, Any]) -> CudaApi:
    code = entry["code"]
    off_cuda = entry["off_cuda"]
    if off_cuda not in OFF_CUDA:
        raise ValueError(f"{name}: off_cuda must be one of {sorted(OFF_CUDA)}, not {off_cuda!r}")
    return CudaApi(
        name=name,
        code=None if code == "none" else code,
        off_cuda=off_cuda,
        severity=Severity[entry["severity"].upper()],
        message=entry["message"],
        applicability=Applicability(entry.get("fix", "safe")),
        helper=entry.get("helper"),
        params=tuple(entry.get("params", ())),
        is_class=entry.get("kind") == "class",
        probe=entry.get("probe", False),
        dtype=entry.get("dtype"),
        root=entry.get("root", False),
        portable=entry.get("portable"),
        device=entry.get("device"),
        keywords=tuple(entry.get("keywords", ())),
        min_torch=_version(entry.get("min_torch", "0.0")),
        safe_from_torch=_version(entry.get("safe_from_torch", "0.0")),
    )


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def canonical(name: str) -> str:
    """`torch.cuda.memory.empty_cache` -> `torch.cuda.empty_cache` (submodules re-export)."""
    aliases = table().aliases
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in aliases:
            return ".".join([aliases[prefix], *parts[end:]])
    return name


def lookup(name: str) -> CudaApi | None:
    """The entry for a qualified name: the longest entry that is a dotted prefix of it.
    A root entry (`torch.cuda`) covers the names below it, not itself."""
    name = canonical(name)
    apis = table().apis
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        api = apis.get(".".join(parts[:end]))
        if api is None:
            continue
        if api.root and end == len(parts):
            return None
        return api
    return None


def device_type_argument(name: str) -> DeviceTypeArgument | None:
    return table().device_type_arguments.get(canonical(name))


@cache
def probes() -> frozenset[str]:
    """Calls that are true only where CUDA is in use: a branch under them is guarded."""
    return frozenset(api.name for api in table().apis.values() if api.probe)

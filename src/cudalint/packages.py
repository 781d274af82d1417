"""The table of CUDA-only packages (data/cuda_packages.toml), shared by CUD201, CUD401, CUD402."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import cache, lru_cache

from cudalint import data
from cudalint.finding import Severity


@dataclass(frozen=True)
class CudaPackage:
    name: str
    imports: tuple[str, ...]
    pip: tuple[str, ...]
    conda: tuple[str, ...]
    alternative: str
    severity: Severity = Severity.ERROR
    repos: tuple[str, ...] = ()  # `owner/name`, lower-case


@cache
def load_packages() -> tuple[CudaPackage, ...]:
    return tuple(
        CudaPackage(
            name=entry["name"],
            imports=tuple(entry.get("imports", ())),
            pip=tuple(normalize(p) for p in entry.get("pip", ())),
            conda=tuple(normalize(c) for c in entry.get("conda", ())),
            alternative=entry["alternative"],
            severity=Severity[entry.get("severity", "error").upper()],
            repos=tuple(r.lower() for r in entry.get("repos", ())),
        )
        for entry in data.load("cuda_packages.toml")["package"]
    )


def normalize(distribution: str) -> str:
    """PEP 503 normalisation: `Flash_Attn` -> `flash-attn` (globs keep their `*`)."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


@lru_cache(maxsize=4096)  # a run asks for every import of every file: the same few modules
def by_import(module: str) -> CudaPackage | None:
    """The package an imported module belongs to: `cupy.cuda` -> cupy; `numba` -> None."""
    for package in load_packages():
        for root in package.imports:
            if module == root or module.startswith(root + "."):
                return package
    return None


def by_name(name: str) -> CudaPackage | None:
    """The package a pip distribution or conda package name belongs to: one table serves
    both, so `faiss-gpu` under conda and `cupy` under pip are found alike."""
    normalized = normalize(name)
    return next((p for p in load_packages()
                 if any(fnmatch.fnmatchcase(normalized, g) for g in (*p.pip, *p.conda))),
                None)


def by_repository(owner_name: str) -> CudaPackage | None:
    """The package built from a source repository (`NVlabs/tiny-cuda-nn`, any case)."""
    wanted = owner_name.lower().removesuffix(".git")
    return next((p for p in load_packages() if wanted in p.repos), None)

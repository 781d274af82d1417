"""What makes a dependency pin, an index or a container image CUDA-only, and what to say.

Shared by CUD401 (conda), CUD402 (pip), CUD403 (containers) and CUD404 (CI): every place a
pin is written is judged the same way. CUDA-only packages come from the shared table
(data/cuda_packages.toml, `cudalint.packages`).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from cudalint import packages
from cudalint.engine.contract import FileRule
from cudalint.finding import Finding, Severity
from cudalint.formats.requirements import excluded_on_macos, requirement
from cudalint.kinds import SourceFile

if TYPE_CHECKING:
    from packaging.requirements import Requirement

# A CUDA build named in a URL, a wheel file name or a local version: cu121, cuda12, cuda-12.
_CUDA_TAG = re.compile(r"(?<![a-z0-9])cu(?:da)?[-_]?\d{2,3}(?!\d)|jax_cuda", re.IGNORECASE)
_LOCAL_CUDA = re.compile(r"cu(?:da)?\d", re.IGNORECASE)  # `+cu121`, `+pt21cu121`, `+cuda12.cudnn89`
_NVIDIA_INDEX = re.compile(r"pypi\.(?:ngc\.)?nvidia\.com", re.IGNORECASE)
_CUDA_EXTRA = re.compile(r"(?:and-)?cuda\d*(?:[-_]\w+)?|gpu", re.IGNORECASE)
# Extras whose CUDA dependencies carry a Linux marker: on a Mac they install nothing extra.
_LINUX_ONLY_EXTRAS = frozenset({("tensorflow", "and-cuda")})
_CONDA_TOOLKIT = (
    "cudatoolkit", "cudatoolkit-dev", "cuda", "cuda-*", "pytorch-cuda", "cudnn", "nccl",
    "magma-cuda*", "pytorch-gpu", "cutensor", "libcublas*", "libcufft*",
    "libcurand*", "libcusolver*", "libcusparse*", "libcudnn*", "libnccl*", "libnvjitlink*",
    "libnpp*",
)
_CONDA_SPEC = re.compile(
    r"(?:(?P<channel>[\w./:-]+)::)?(?P<name>[A-Za-z0-9_][A-Za-z0-9_.-]*)(?P<rest>.*)"
)
_CONDA_CUDA_BUILD = re.compile(r"cuda|(?<![a-z0-9])cu\d{2,3}", re.IGNORECASE)
_IMAGE_TAG = re.compile(r"(?<![a-z0-9])(?:cuda|cu\d{2,3}|gpu)(?![a-z])", re.IGNORECASE)
_REGISTRY_PREFIXES = ("docker.io/", "index.docker.io/", "registry-1.docker.io/", "library/")

_MAC_TORCH = "PyTorch's macOS wheels on PyPI run on MPS"
# A source repository named by a URL (`git+https://github.com/Dao-AILab/flash-attention.git@v2`,
# `git+ssh://git@github.com/NVlabs/tiny-cuda-nn`): its `owner/name`.
_REPOSITORY = re.compile(r"(?:github|gitlab)\.com[/:]([\w.-]+/[\w.-]+?)(?:\.git)?(?=[/@#?]|$)",
                         re.IGNORECASE)
# A wheel or sdist file named by a URL or path: the distribution its name starts with.
_DISTRIBUTION_FILE = re.compile(r"(?:^|[/=])([A-Za-z0-9][\w.]*?)-\d[^/]*\.(?:whl|tar\.gz|zip)"
                                r"(?=[#?]|$)")


@dataclass(frozen=True)
class Problem:
    message: str
    severity: Severity = Severity.ERROR
    guarded: bool = False  # in an optional extra or dependency group
    off_macos: bool = False  # kept off macOS by an environment marker: info


def finding(rule: FileRule, source: SourceFile, where: tuple[int, int], problem: Problem,
            *, guarded: bool = False, prefix: str = "") -> Finding:
    """The rule's finding for `problem` at a (row, column)."""
    return rule.finding(source, where[0], where[1], message=prefix + problem.message,
                        severity=problem.severity, guarded=guarded or problem.guarded)


def is_cuda_url(url: str) -> bool:
    return bool(_CUDA_TAG.search(url) or _NVIDIA_INDEX.search(url))


def index_problem(option: str, url: str) -> Problem | None:
    """`--index-url`, `--extra-index-url`, `--find-links` (and their uv forms) naming CUDA
    wheels: the only index is an error (nothing for macOS there), an extra one a warning."""
    if not is_cuda_url(url):
        return None
    if option in ("--index-url", "index-url"):
        return Problem(f"`{url}` is a CUDA wheel index and the only one: it has no macOS "
                       f"wheels; install from PyPI there ({_MAC_TORCH})")
    return Problem(f"`{url}` is a CUDA wheel index: Linux installs get CUDA builds; keep it "
                   f"for Linux only, macOS installs from PyPI ({_MAC_TORCH})", Severity.WARNING)


def requirement_problem(text: str) -> Problem | None:
    """A PEP 508 requirement (or a URL / `#egg=` line) that needs CUDA."""
    parsed = requirement(text)
    if parsed is None:
        return url_problem(text)
    problem = (_package(parsed.name) or _local_version(parsed) or _extras(parsed)
               or (url_problem(parsed.url) if parsed.url else None))
    if problem is not None and excluded_on_macos(parsed.marker):
        # pip skips the line on a Mac: harmless off CUDA
        return replace(problem, severity=Severity.INFO, off_macos=True,
                       message=f"{problem.message} (its marker keeps it off macOS, where pip "
                               "skips it)")
    return problem


def package_problem(name: str, version: str = "") -> Problem | None:
    """A dependency given as a name and a version string (poetry, uv sources)."""
    problem = _package(name)
    if problem is None and _has_cuda_local_version(version):
        problem = Problem(f"`{name} {version}` is a CUDA build (the local version says so); "
                          f"pin the plain version, which PyPI has for macOS")
    return problem


def url_problem(text: str) -> Problem | None:
    """A direct URL or path: `#egg=flash-attn`, a CUDA-only package's repository
    (`git+https://github.com/NVlabs/tiny-cuda-nn/#subdirectory=bindings/torch`) or wheel
    file (`flash_attn-2.5.8+cu122torch2.3-cp310-cp310-linux_x86_64.whl`), or a CUDA build."""
    egg = re.search(r"[#&]egg=([\w.-]+)", text)
    if egg and (problem := _package(egg.group(1))):
        return problem
    distribution = _DISTRIBUTION_FILE.search(text)
    package = None if distribution is None else packages.by_name(distribution.group(1))
    if package is not None:
        return _described(package, f"`{text}` is a build of `{package.name}`, which")
    repository = _REPOSITORY.search(text)
    package = None if repository is None else packages.by_repository(repository.group(1))
    if package is not None:
        return _described(package, f"`{text}` builds `{package.name}`, which")
    if is_cuda_url(text):
        return Problem(f"`{text}` is a CUDA build: it only installs on Linux with CUDA")
    return None


def _package(name: str) -> Problem | None:
    package = packages.by_name(name)
    return None if package is None else _described(package, f"`{name}`")


def _described(package: packages.CudaPackage, subject: str) -> Problem:
    if package.severity is Severity.ERROR:
        return Problem(f"{subject} needs an NVIDIA GPU; use {package.alternative}")
    return Problem(f"{subject} only partly works off CUDA: {package.alternative}",
                   package.severity)


def _local_version(parsed: Requirement) -> Problem | None:
    for spec in parsed.specifier:
        if _has_cuda_local_version(spec.version):
            public = spec.version.split("+", 1)[0]
            return Problem(f"`{spec.version}` is a CUDA build of {parsed.name}: pin "
                           f"`{parsed.name}{spec.operator}{public}`, which PyPI has for macOS")
    return None


def _has_cuda_local_version(version: str) -> bool:
    _, plus, local = version.partition("+")
    return bool(plus) and bool(_LOCAL_CUDA.search(local))


def is_cuda_extra(extra: str) -> bool:
    """`cuda12`, `cuda12_pip`, `and-cuda`, `gpu`: an extra that pulls CUDA wheels."""
    return _CUDA_EXTRA.fullmatch(extra) is not None


def _extras(parsed: Requirement) -> Problem | None:
    name = packages.normalize(parsed.name)
    for extra in sorted(parsed.extras):
        if not is_cuda_extra(extra):
            continue
        if (name, extra.lower()) in _LINUX_ONLY_EXTRAS:
            return Problem(f"`{parsed.name}[{extra}]` pulls NVIDIA CUDA wheels on Linux (none "
                           f"on macOS); plain `{parsed.name}` is the portable pin",
                           Severity.WARNING)
        return Problem(f"`{parsed.name}[{extra}]` pulls NVIDIA CUDA wheels, which macOS does "
                       f"not have; pin plain `{parsed.name}`")
    return None


def conda_problem(spec: str) -> Problem | None:
    """A conda match spec: `cudatoolkit=11.8`, `nvidia::cuda-nvcc`, `pytorch=2.1=*cuda*`."""
    match = _CONDA_SPEC.fullmatch(spec.strip())
    if match is None:
        return None
    name, rest = match.group("name").lower(), match.group("rest")
    channel = (match.group("channel") or "").lower()
    if any(fnmatch.fnmatchcase(name, glob) for glob in _CONDA_TOOLKIT):
        return Problem(f"`{name}` is part of the NVIDIA CUDA stack: conda has no macOS build, "
                       "so the environment does not solve there; drop it (conda-forge's "
                       "`pytorch` for macOS runs on MPS without it)")
    package = packages.by_name(name)
    if package is not None:
        return Problem(f"`{name}` needs an NVIDIA GPU; use {package.alternative}",
                       package.severity)
    if _CONDA_CUDA_BUILD.search(rest):
        return Problem(f"`{spec.strip()}` selects a CUDA build; conda has none for macOS: pin "
                       f"`{name}` without the build string")
    if channel_problem(channel) is not None:
        return Problem(f"`{spec.strip()}` comes from the `nvidia` channel, which only holds "
                       "CUDA packages")
    return None


def channel_problem(channel: str) -> Problem | None:
    """The `nvidia` conda channel (also as a URL or a label)."""
    lowered = channel.lower().rstrip("/")
    if lowered == "nvidia" or lowered.startswith("nvidia/") or lowered.endswith("/nvidia") \
            or "/nvidia/label/" in lowered:
        return Problem("the `nvidia` channel only holds CUDA packages; macOS environments "
                       "need nothing from it", Severity.WARNING)
    return None


def cuda_image(reference: str) -> bool:
    """A container image built on CUDA: `nvidia/cuda:12.1.0-devel-ubuntu22.04`,
    `nvcr.io/nvidia/pytorch:24.01-py3`, `pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime`,
    `tensorflow/tensorflow:latest-gpu` (also as `docker://...` or enroot's `nvcr.io#...`)."""
    image = reference.strip().removeprefix("docker://").replace("#", "/").lower()
    for prefix in _REGISTRY_PREFIXES:
        image = image.removeprefix(prefix)
    image = image.partition("@")[0]  # a digest says nothing
    repository, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] \
        else (image, "", "")
    if repository.startswith(("nvidia/", "nvcr.io/")) or "cuda" in repository:
        return True
    return bool(_IMAGE_TAG.search(tag))

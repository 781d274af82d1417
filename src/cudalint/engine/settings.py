"""The settings a rule may read and the project facts they come from: plain records
(cudalint.record), so that a run which replays every file from the cache computes them
without importing LibCST or dataclasses."""

from __future__ import annotations

from cudalint.record import Record

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from pathlib import Path

# The helper functions a fix may call, all defined beside pick_device in the helper module.
HELPER_MODULE_DEFAULT = "cudalint.device"
# The helper module of a file whose fixes carry the helper inline (engine.project.helper_place):
# never imported, and no module of that name is ever written.
INLINE_MODULE = "_cudalint_inline_device"
# The first bytes of the helper's source (cudalint/device.py): a file that starts so is a
# copy of the helper, which a run neither checks nor fixes, and which --fix may extend.
HELPER_MARKER = b'"""Portable device selection and `torch.cuda.*` replacements (written by'
MAX_HELPER_SIZE = 1 << 20  # bytes: a helper copy is some kilobytes; more is none


def is_helper_copy(data: bytes) -> bool:
    return data.lstrip(b"\xef\xbb\xbf").startswith(HELPER_MARKER)


class Settings(Record):
    """The parts of the configuration a rule may read (a mutable record)."""

    __slots__ = ("extension_modules", "first_party", "helper_defines", "helper_file",
                 "helper_module", "own_cuda_method", "target_torch", "torch_stated")
    FIELDS = ("helper_module", "target_torch", "first_party", "extension_modules",
              "own_cuda_method", "helper_file", "torch_stated", "helper_defines")
    __hash__ = None  # type: ignore[assignment]

    def __init__(
        self,
        helper_module: str = HELPER_MODULE_DEFAULT,
        target_torch: tuple[int, int] = (2, 6),
        first_party: frozenset[str] = frozenset(),
        extension_modules: frozenset[str] = frozenset(),
        own_cuda_method: bool = False,
        helper_file: Path | None = None,
        torch_stated: bool = True,
        helper_defines: frozenset[str] | None = None,
    ) -> None:
        self.helper_module = helper_module
        self.target_torch = target_torch
        self.first_party = first_party
        # the project's own compiled CUDA extensions
        self.extension_modules = extension_modules
        # A class of the checked tree defines its own `cuda` method: `x.cuda()` may be one
        # of them, so rewriting it to `.to(...)` is not safe.
        self.own_cuda_method = own_cuda_method
        # Where the helper module's file goes when the run writes it (the standalone helper).
        self.helper_file = helper_file
        # Whether the project (or `target-torch`) states `target_torch`; False: assumed
        # (DEFAULT_TARGET_TORCH), and a fix that needs a given torch is unsafe.
        self.torch_stated = torch_stated
        # What the helper's existing file defines where the run may not add to it (the
        # editor, standard input): fixes needing a function it lacks carry their functions
        # inline (engine.fixes.fixer). None: the run writes what the helper lacks.
        self.helper_defines = helper_defines


class SetupFacts(Record):
    """What a project's setup.py declares (engine/project/setup_py.py reads it)."""

    __slots__ = ("cuda_extensions", "packages", "requires")
    FIELDS = ("cuda_extensions", "packages", "requires")

    def __init__(self, cuda_extensions: frozenset[str] = frozenset(),
                 packages: frozenset[str] = frozenset(), requires: tuple[str, ...] = ()) -> None:
        self.cuda_extensions = cuda_extensions  # dotted module names
        self.packages = packages  # top-level import names the project ships
        self.requires = requires  # install_requires and extras_require entries (literals)

"""The device helper's source, for `cudalint init-helper` to copy into a user's project."""

from __future__ import annotations

from pathlib import Path

HELPER_PATH = Path(__file__).resolve().parent.parent / "device.py"


class HelperExistsError(FileExistsError):
    """The destination exists and overwriting was not asked for."""


def helper_source() -> str:
    """The text of `cudalint/device.py`, which needs only the standard library and torch."""
    return HELPER_PATH.read_text(encoding="utf-8")


def write_helper(path: Path, *, force: bool) -> None:
    """Write the helper to `path`, creating its folder; refuse to overwrite unless `force`."""
    if path.exists() and not force:
        raise HelperExistsError(f"{path} exists; pass --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(helper_source(), encoding="utf-8")

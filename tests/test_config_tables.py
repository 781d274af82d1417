"""Tables of [tool.cudalint] that a subcommand reads itself: `check` accepts them as tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalint.config import ConfigError, load_config


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[tool.cudalint]\nselect = ['CUD1']\n{table}",
                                             encoding="utf-8")
    return tmp_path


def test_the_smoke_table_is_accepted_and_left_to_smoke(tmp_path: Path) -> None:
    root = _project(tmp_path, "\n[tool.cudalint.smoke]\nrtol = 1e-4\n"
                              "[tool.cudalint.smoke.outputs.loss]\natol = 1e-6\n")
    config = load_config(root)
    assert config.select == ["CUD1"]


@pytest.mark.parametrize("table", ["smoke = 3\n", "smoke = ['rtol']\n"])
def test_a_smoke_key_that_is_no_table_is_one_line(tmp_path: Path, table: str) -> None:
    with pytest.raises(ConfigError, match=r"\[tool.cudalint\] smoke must be a table"):
        load_config(_project(tmp_path, table))


def test_other_unknown_keys_are_still_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown key in \[tool.cudalint\]: 'smok'"):
        load_config(_project(tmp_path, "[tool.cudalint.smok]\nrtol = 1\n"))

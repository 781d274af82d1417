"""The data tables' loader: a parsed copy of a TOML table, kept as bytecode is, stands for the
table only while the table is unchanged."""

from __future__ import annotations

import marshal
import os
import sys

import pytest
import tomllib

from cudalint import data

_TABLE = '# packages\n[[package]]\nname = "cupy"\nimports = ["cupy"]\n'


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "FOLDER", tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    data.load.cache_clear()
    yield tmp_path
    data.load.cache_clear()


def _copies(folder):
    return sorted(p.name for p in (folder / "__pycache__").glob("*.marshal"))


def test_a_table_is_parsed_once_and_its_copy_read_after(folder):
    (folder / "t.toml").write_text(_TABLE)
    assert data.load("t.toml") == tomllib.loads(_TABLE)
    assert _copies(folder) == [f"t.toml.{sys.implementation.cache_tag}.marshal"]
    # a later process reads the copy: a copy that differs from the table shows it is used
    stamp = data._stamp(folder / "t.toml")
    (folder / "__pycache__" / _copies(folder)[0]).write_bytes(
        marshal.dumps((stamp, {"from": "the copy"})))
    data.load.cache_clear()
    assert data.load("t.toml") == {"from": "the copy"}


def test_an_edited_table_is_parsed_again(folder):
    table = folder / "t.toml"
    table.write_text(_TABLE)
    data.load("t.toml")
    edited = _TABLE.replace("cupy", "cudf")  # the same size: the modification time tells
    table.write_text(edited)
    os.utime(table, ns=(table.stat().st_atime_ns, table.stat().st_mtime_ns + 1_000_000))
    data.load.cache_clear()
    assert data.load("t.toml")["package"][0]["name"] == "cudf"


def test_a_damaged_copy_is_ignored_and_replaced(folder):
    (folder / "t.toml").write_text(_TABLE)
    data.load("t.toml")
    copy = folder / "__pycache__" / _copies(folder)[0]
    copy.write_bytes(b"\x00garbage")
    data.load.cache_clear()
    assert data.load("t.toml") == tomllib.loads(_TABLE)
    assert data._parsed_copy("t.toml", data._stamp(folder / "t.toml")) == tomllib.loads(_TABLE)


def test_no_copy_without_bytecode_nor_where_it_cannot_be_written(folder, monkeypatch):
    (folder / "t.toml").write_text(_TABLE)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert data.load("t.toml") == tomllib.loads(_TABLE)
    assert not (folder / "__pycache__").exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    (folder / "__pycache__").write_text("a file where the folder would be")
    data.load.cache_clear()
    assert data.load("t.toml") == tomllib.loads(_TABLE)


def test_json_tables_and_tables_in_subfolders_are_kept_too(folder):
    (folder / "mps").mkdir()
    (folder / "mps" / "t.json").write_text('{"rules": [1, 2]}')
    assert data.load("mps/t.json") == {"rules": [1, 2]}
    assert _copies(folder) == [f"mps.t.json.{sys.implementation.cache_tag}.marshal"]
    data.load.cache_clear()
    assert data.load("mps/t.json") == {"rules": [1, 2]}


def test_the_shipped_tables_read_from_their_copies_as_parsed():
    import json

    data.load.cache_clear()
    for path in sorted(data.FOLDER.rglob("*.toml")) + sorted(data.FOLDER.rglob("*.json")):
        name = path.relative_to(data.FOLDER).as_posix()
        text = path.read_text("utf-8")
        assert data.load(name) == (json.loads(text) if name.endswith(".json")
                                   else tomllib.loads(text)), name

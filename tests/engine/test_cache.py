"""The lint cache: a second run prints exactly what a fresh check prints, for every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.engine.running.cache import FOLDER

_TRAIN = """\
import torch


def train(model, batches):
    model = model.cuda()
    for x, y in batches:
        loss = model(x.cuda()).sum()  # noqa: CUD102
        print("moving to cuda")
    torch.cuda.synchronize()
    return torch.load("ckpt.pt")
"""
_FILES = {
    "train.py": _TRAIN,
    "clean.py": "import os\n\n\ndef f():\n    return os.getcwd()\n",
    "broken.py": "def f(:\n    return x.cuda()\n",
    "requirements.txt": "torch==2.3.0+cu121\nnumpy\n",
    "pkg/helpers.py": "import torch\nDEVICE = 'cuda:0'\nx = torch.ones(2, device=DEVICE)\n",
}


@pytest.fixture
def project(chdir_tmp: Path) -> Path:
    for name, text in _FILES.items():
        (chdir_tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (chdir_tmp / name).write_text(text, encoding="utf-8")
    return chdir_tmp


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["check", ".", *args])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("output", [
    ["--output-format", "full"], ["--output-format", "concise"], ["--output-format", "json"],
    ["--output-format", "github"], ["--output-format", "sarif"], ["--statistics"],
])
def test_a_cached_run_prints_what_a_fresh_one_does(project, capsys, output):
    fresh = _check(capsys, "--no-cache", *output)
    assert not (project / FOLDER).exists()
    first = _check(capsys, *output)
    assert (project / FOLDER).is_dir()
    second = _check(capsys, *output)
    assert fresh[0] == 1 and "CUD" in fresh[1]
    assert first == fresh
    assert second == fresh


def test_the_cache_folder_is_tagged_and_ignored(project, capsys):
    _check(capsys)
    folder = project / FOLDER
    assert (folder / "CACHEDIR.TAG").read_text().startswith(
        "Signature: 8a477f597d28d172789f06886806bc55")
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"


def test_entries_are_replayed_not_recomputed(project, capsys, monkeypatch):
    _check(capsys, "--output-format", "json")
    from cudalint.engine.running import runner

    def no_check(*args, **kwargs):
        raise AssertionError("checked again")

    monkeypatch.setattr(runner, "check_python", no_check)
    monkeypatch.setattr(runner, "check_other", no_check)
    code, out = _check(capsys, "--output-format", "json")
    assert code == 1 and json.loads(out)


def test_an_edited_file_is_checked_again(project, capsys):
    _check(capsys, "--output-format", "concise")
    (project / "clean.py").write_text("import torch\nm = torch.nn.Linear(2, 2).cuda()\n")
    _code, out = _check(capsys, "--output-format", "concise")
    assert "clean.py:2:" in out


def test_other_rules_or_settings_are_other_entries(project, capsys):
    _check(capsys, "--output-format", "concise")
    _code, selected = _check(capsys, "--output-format", "concise", "--select", "CUD111")
    assert "CUD111" in selected and "CUD102" not in selected
    (project / "pyproject.toml").write_text(
        '[tool.cudalint]\nper-file-ignores = {"train.py" = ["CUD111"]}\n')
    _code, ignored = _check(capsys, "--output-format", "concise", "--select", "CUD111")
    assert "train.py" not in ignored


def test_an_ignore_is_another_entry(project, capsys):
    """`ignore`, on the command line or in the configuration, is part of the key: a cached
    run's findings of a code are not replayed once it is ignored, nor lost once it is not."""
    _code, everything = _check(capsys, "--output-format", "concise")
    assert "train.py:5:19: CUD102" in everything and "CUD111" in everything
    _code, ignored = _check(capsys, "--output-format", "concise", "--ignore", "CUD102")
    assert "CUD102" not in ignored and "CUD111" in ignored
    (project / "pyproject.toml").write_text('[tool.cudalint]\nignore = ["CUD111"]\n')
    _code, configured = _check(capsys, "--output-format", "concise")
    assert "CUD111" not in configured and "train.py:5:19: CUD102" in configured
    (project / "pyproject.toml").write_text("[tool.cudalint]\n")
    assert _check(capsys, "--output-format", "concise")[1] == everything


@pytest.mark.parametrize("damage", ["index", "texts", "entries"])
def test_damaged_entries_are_misses(project, capsys, damage):
    fresh = _check(capsys, "--output-format", "full")
    folder = project / FOLDER
    texts = list(folder.glob("text/*.txt"))
    assert texts and len(list(folder.glob("index-*.json"))) == 1
    if damage == "texts":
        for text in texts:
            text.unlink()
    for index in folder.glob("index-*.json"):
        if damage == "index":
            index.write_text("{not json")
        elif damage == "entries":
            loaded = json.loads(index.read_text())
            for entry in loaded["files"].values():
                entry["findings"] = [{"code": 1}] if entry["findings"] else "x"
            index.write_text(json.dumps(loaded))
    assert _check(capsys, "--output-format", "full") == fresh
    assert _check(capsys, "--output-format", "full") == fresh  # stored again


def test_no_cache_from_the_environment(project, capsys, monkeypatch):
    monkeypatch.setenv("CUDALINT_NO_CACHE", "1")
    _check(capsys)
    assert not (project / FOLDER).exists()


def test_a_fix_run_fixes_a_file_whose_lint_is_cached(project, capsys):
    _check(capsys)
    code, _out = _check(capsys, "--fix")
    assert "pick_device" in (project / "pkg/helpers.py").read_text()
    assert code == 1  # what cannot be fixed remains


def test_a_new_target_torch_is_a_new_entry(project, capsys):
    """The target torch comes from the project's requirements: a new pin, new findings."""
    (project / "ops.py").write_text("import torch\n\n\ndef pad(x):\n"
                                    "    return torch.nn.functional.rrelu(x.cuda())\n")
    outputs = []
    for pin in ("torch==2.1.0\n", "torch>=2.7\n"):
        (project / "requirements.txt").write_text(pin)
        _check(capsys, "--output-format", "json")
        cached = _check(capsys, "--output-format", "json")
        assert cached == _check(capsys, "--output-format", "json", "--no-cache")
        outputs.append([f["message"] for f in json.loads(cached[1])
                        if f["filename"].endswith("ops.py")])
    assert outputs[0] != outputs[1]


@pytest.fixture
def settled(monkeypatch):
    """Files count as settled at once (in use, only those changed 2 s before they are read)."""
    from cudalint.engine.running import cache

    monkeypatch.setattr(cache, "_SETTLED_NS", -10**12)


def _reads(monkeypatch) -> list[str]:
    """The names of the files read from now on."""
    from cudalint.engine.reading import reader

    names: list[str] = []
    read = reader.read_regular

    def counted(path, limit):
        names.append(Path(path).name)
        return read(path, limit)

    monkeypatch.setattr(reader, "read_regular", counted)
    from cudalint.engine.project import facts as project_module
    from cudalint.engine.running import runner

    monkeypatch.setattr(runner, "read_regular", counted)
    monkeypatch.setattr(project_module, "read_regular", counted)
    return names


def test_an_unchanged_file_is_not_read_again(project, capsys, monkeypatch, settled):
    fresh = _check(capsys, "--output-format", "full")
    reads = _reads(monkeypatch)
    assert _check(capsys, "--output-format", "full") == fresh
    # (requirements.txt is read for the project's torch pin, as every run reads it)
    assert not set(reads) & {"train.py", "clean.py", "broken.py", "helpers.py"}


def test_a_file_changed_just_now_is_read_and_hashed_every_time(project, capsys, monkeypatch):
    fresh = _check(capsys, "--output-format", "concise")
    reads = _reads(monkeypatch)
    assert _check(capsys, "--output-format", "concise") == fresh
    assert {"train.py", "clean.py", "helpers.py"} <= set(reads)


def test_a_file_whose_modification_time_was_set_back_just_now_is_read_every_time(
        project, capsys, monkeypatch):
    """The change time says it was written just now, whatever the modification time says (an
    editor or `touch -d` may set that back): its status cannot stand for its content yet."""
    import os

    clean = project / "clean.py"
    hour_ago = clean.stat().st_mtime_ns - 3600 * 10**9
    os.utime(clean, ns=(hour_ago, hour_ago))
    fresh = _check(capsys, "--output-format", "concise")
    reads = _reads(monkeypatch)
    assert _check(capsys, "--output-format", "concise") == fresh
    assert "clean.py" in reads


def test_an_edit_that_keeps_the_size_and_the_modification_time_is_seen(project, capsys,
                                                                       settled):
    """Editing sets the change time (ctime), which no program can set back."""
    import os
    import time

    first = _check(capsys, "--output-format", "concise")
    assert "clean.py" not in first[1]
    clean = project / "clean.py"
    before = clean.stat()
    edited = "import os\n\n\ndef f(m):\n    return m.cuda() #\n"
    assert len(edited) == before.st_size
    time.sleep(0.05)  # past the file system's clock tick
    clean.write_text(edited)
    os.utime(clean, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (clean.stat().st_size, clean.stat().st_mtime_ns) == (before.st_size,
                                                                before.st_mtime_ns)
    second = _check(capsys, "--output-format", "concise")
    assert "clean.py:5:" in second[1]
    assert second == _check(capsys, "--output-format", "concise", "--no-cache")


def test_two_runs_sharing_the_cache_keep_each_others_entries(project, capsys, monkeypatch):
    """A run saves its index merged with what another run saved after it read it."""
    from cudalint.engine.running import cache as cache_module

    _check(capsys, "--output-format", "json")
    opened = []
    real_open = cache_module.Cache.open

    def open_and_keep(*args, **kwargs):
        opened.append(real_open(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(cache_module.Cache, "open", open_and_keep)
    (project / "a.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    (project / "b.py").write_text("import torch\ny = torch.zeros(1).cuda()\n")
    main(["check", "--output-format", "json", "a.py"])  # run 1: reads the index, saves a.py
    main(["check", "--output-format", "json", "b.py"])  # run 2: saves b.py
    stale = opened[0]
    stale.put(project / "a.py", stale.changed[str(project / "a.py")])
    stale.save()  # run 1 saves again, after run 2
    index = next((project / FOLDER).glob("index-*.json"))
    files = json.loads(index.read_text())["files"]
    assert {str(project / name) for name in ("a.py", "b.py", "train.py")} <= set(files)
    capsys.readouterr()
    fresh = _check(capsys, "--output-format", "json", "--no-cache")
    assert _check(capsys, "--output-format", "json") == fresh


def test_an_edited_cudalint_file_makes_new_keys(tmp_path, monkeypatch):
    """The fingerprint of cudalint's own files (an editable install edited in place) changes
    with a source or data file's size or time, and not with its bytecode."""
    import os

    import cudalint
    from cudalint.engine.running.cache import _installed_files

    package = tmp_path / "cudalint"
    for name in ("__init__.py", "rules/cuda_method.py", "data/table.json", "README.md",
                 "__pycache__/cli.cpython-311.pyc"):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("x = 1\n")
    monkeypatch.setattr(cudalint, "__file__", str(package / "__init__.py"))
    fingerprint = _installed_files.__wrapped__

    first = fingerprint()
    (package / "__pycache__" / "cli.cpython-311.pyc").write_text("other bytecode\n")
    (package / "README.md").write_text("prose\n")
    assert fingerprint() == first
    (package / "rules" / "cuda_method.py").write_text("x = 2\n")  # same size, a later time
    os.utime(package / "rules" / "cuda_method.py", ns=(1, 10**18))
    second = fingerprint()
    assert second != first
    (package / "data" / "table.json").write_text("x = 22\n")
    assert fingerprint() != second

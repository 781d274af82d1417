"""Notebooks: cells linted and fixed as Python, magics understood, the JSON layout kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.engine.reading.cells import read_cell
from cudalint.runtime.helper import inline_block


def _notebook(*cells: dict, **layout) -> str:
    document = {"cells": list(cells), "metadata": {"kernelspec": {"language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, **{"indent": 1, "ensure_ascii": False, **layout}) + "\n"


def _code(source: str | list[str], outputs: list | None = None) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {},
            "outputs": outputs or [], "source": source}


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": [text]}


def _check(capsys, path: Path, *args: str) -> list[tuple]:
    main([str(path), "--output-format", "json", *args])
    return [(f["cell"], f["location"]["row"], f["location"]["column"], f["code"])
            for f in json.loads(capsys.readouterr().out)]


@pytest.mark.parametrize(
    ("cell", "python", "shell"),
    [
        pytest.param("x = 1\ny = '!not magic'", "x = 1\ny = '!not magic'", "", id="python"),
        pytest.param("!nvidia-smi\nx = 1", "pass  # cudalint-magic-0\nx = 1", " nvidia-smi\n",
                     id="bang"),
        pytest.param("if x:\n    files = !ls\n", "if x:\n    pass  # cudalint-magic-0\n",
                     "\n             ls\n", id="indented-assignment"),
        pytest.param("%env CUDA_VISIBLE_DEVICES=0\n%env NCCL_DEBUG INFO\n%env A",
                     "pass  # cudalint-magic-0\npass  # cudalint-magic-1\n"
                     "pass  # cudalint-magic-2",
                     "     CUDA_VISIBLE_DEVICES=0\n     NCCL_DEBUG=INFO\n", id="env"),
        pytest.param("%pip install cupy-cuda12x \\\n    xformers\nx?",
                     "pass  # cudalint-magic-0\npass  # cudalint-magic-1\n"
                     "pass  # cudalint-magic-2",
                     " pip install cupy-cuda12x \\\n    xformers\n", id="pip-continued"),
        pytest.param("%%bash\nnvidia-smi", None, "\nnvidia-smi", id="bash-cell"),
        pytest.param("%%script bash\nnvcc -V", None, "\nnvcc -V", id="script-cell"),
        pytest.param("%%html\n<b>!nvidia-smi</b>", None, "", id="html-cell"),
        pytest.param("%%time\nx.cuda()", "pass  # cudalint-magic-0\nx.cuda()", "\n",
                     id="python-cell-magic"),
    ],
)
def test_read_cell(cell, python, shell):
    read = read_cell(cell)
    assert (read.python, read.shell) == (python, shell)


def test_cells_are_numbered_among_all_cells(tmp_path, capsys):
    path = tmp_path / "nb.ipynb"
    path.write_text(_notebook(_markdown("# cuda notes"), _code("import torch"),
                              _markdown("text"), _code(["x = 1\n", "y = x.cuda()"]),
                              {"cell_type": "raw", "metadata": {}, "source": ["!nvidia-smi"]},
                              _code(["%%bash\n", "echo ok\n", "nvidia-smi -L"])))
    assert _check(capsys, path) == [(4, 2, 7, "CUD102"), (6, 3, 1, "CUD501")]


def test_a_cell_that_does_not_parse_is_reported_and_the_others_are_checked(tmp_path, capsys):
    path = tmp_path / "nb.ipynb"
    path.write_text(_notebook(_code("def f(:\n    x.cuda()"), _code("m.cuda()")))
    found = _check(capsys, path)
    assert [(cell, code) for cell, _, _, code in found] == [(1, None), (2, "CUD102")]


def test_noqa_in_cells(tmp_path, capsys):
    path = tmp_path / "nb.ipynb"
    path.write_text(_notebook(_code(["!nvidia-smi  # noqa: CUD501\n",
                                     "x = y.cuda()  # noqa: CUD102\n", "z = y.cuda()"])))
    assert _check(capsys, path) == [(1, 3, 7, "CUD102")]


def test_other_languages_are_skipped(tmp_path, capsys):
    document = json.loads(_notebook(_code("x <- cuda()\n!nvidia-smi")))
    document["metadata"] = {"kernelspec": {"language": "R"}}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(document))
    assert _check(capsys, path) == []


@pytest.mark.parametrize(
    "layout",
    [
        pytest.param({"indent": 1}, id="jupyter"),
        pytest.param({"indent": 2, "sort_keys": True}, id="indent-2"),
        pytest.param({"indent": None}, id="one-line"),
        pytest.param({"indent": None, "separators": (",", ":")}, id="compact"),
        pytest.param({"indent": 1, "ensure_ascii": True}, id="escaped-unicode"),
    ],
)
def test_fix_keeps_the_layout(tmp_path, capsys, layout):
    outputs = [{"name": "stdout", "output_type": "stream", "text": ["Tesla V100 — ok\n"]}]
    cells = (
        _markdown("# Notes — café"),
        _code(["!nvidia-smi\n", "if True:\n", "    %time m = net.cuda()\n",
               "    x = m.cuda()"], outputs),
        _code("y = torch.ones(2).cuda()\n"),
        _code("print('unchanged')"),
    )
    text = _notebook(*cells, **layout)
    path = tmp_path / "nb.ipynb"
    path.write_text(text.rstrip("\n"))  # no trailing newline either
    main(["check", "--fix", str(path)])
    capsys.readouterr()
    fixed = path.read_text()
    expected = json.loads(text)
    # The helper is written once, inline (a notebook's kernel may run anywhere), at the top of
    # the first cell that needs it, after its leading magics and before its imports: defined
    # even where an import fails.
    expected["cells"][1]["source"] = [
        "!nvidia-smi\n",
        *inline_block(["pick_device"]).splitlines(keepends=True), "\n",
        "if True:\n", "    %time m = net.cuda()\n", "    x = m.to(pick_device())"]
    expected["cells"][2]["source"] = "y = torch.ones(2).to(pick_device())\n"
    assert json.loads(fixed) == expected
    assert fixed == json.dumps(expected, **{"indent": 1, "ensure_ascii": False, **layout})
    main(["check", "--fix", str(path)])  # fixing again changes nothing
    capsys.readouterr()
    assert path.read_text() == fixed


def test_diff_writes_nothing(tmp_path, capsys):
    path = tmp_path / "nb.ipynb"
    text = _notebook(_code("y = x.cuda()"))
    path.write_text(text)
    assert main(["check", "--diff", str(path)]) == 1
    out = capsys.readouterr().out
    # No cell imports: a new first code cell imports the helper.
    assert "def pick_device(device=None):  # cudalint device helper" in out
    assert "device helper" not in out.split("@@")[0] or "_device.py" not in out
    assert path.read_text() == text


def _fixed_cells(tmp_path: Path, capsys, *cells: dict) -> list[str]:
    path = tmp_path / "nb.ipynb"
    path.write_text(_notebook(*cells))
    main(["check", "--fix", "--no-cache", str(path)])
    capsys.readouterr()
    return ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]]


def test_a_cell_that_imports_gets_the_helper_in_a_cell_just_before_it(tmp_path, capsys):
    """Above the cell's imports the helper would make them E402; after them it is never
    defined where one fails (the repository's package not installed): a cell of its own."""
    cell = "!pip install -q timm\n%load_ext autoreload\nimport torch\nx = torch.ones(2).cuda()"
    sources = _fixed_cells(tmp_path, capsys, _code("print('first')\n"), _code(cell))
    assert sources == ["print('first')\n", inline_block(["pick_device"]).rstrip("\n"),
                       cell.replace(".cuda()", ".to(pick_device())")]


def test_the_helper_is_never_between_an_import_and_a_sys_path_set_up(tmp_path, capsys):
    """Not between `import sys` and its `sys.path.append` (a new E402 there)."""
    cell = ("import os\n%env CUDA_VISIBLE_DEVICES=0\nimport sys\nsys.path.append('..')\n"
            "import torch\nm = net.cuda()")
    sources = _fixed_cells(tmp_path, capsys, _code(cell))
    assert sources == [inline_block(["pick_device"]).rstrip("\n"),
                       cell.replace(".cuda()", ".to(pick_device())")]


def test_the_helper_goes_in_the_first_cell_that_needs_it(tmp_path, capsys):
    """Not in an earlier cell that imports (its imports may fail before the helper)."""
    sources = _fixed_cells(tmp_path, capsys, _code("import torch\nimport mylab\n"),
                           _code("x = torch.ones(2).cuda()\n"))
    assert sources[0] == "import torch\nimport mylab\n"
    assert sources[1] == inline_block(["pick_device"]) + "\nx = torch.ones(2).to(pick_device())\n"


def test_a_cell_magic_stays_first_and_its_cell_gets_no_helper(tmp_path, capsys):
    """What a `%%timeit` cell defines does not outlive it: the helper goes in the cell that
    needs it, and the magic stays its cell's first line."""
    timed = "%%timeit -n 1\nimport torch\ny = torch.ones(2)\n"
    sources = _fixed_cells(tmp_path, capsys, _code(timed), _code("z = y.cuda()\n"))
    assert sources == [timed, inline_block(["pick_device"]) + "\nz = y.to(pick_device())\n"]
    # a `%%time` cell that needs it: a new cell before it
    timed_move = "%%time\nz = torch.ones(2).cuda()\n"
    sources = _fixed_cells(tmp_path, capsys, _code("import torch\n"), _code(timed_move))
    assert sources[0] == "import torch\n"
    assert sources[1] == inline_block(["pick_device"]).rstrip("\n")
    assert sources[2] == "%%time\nz = torch.ones(2).to(pick_device())\n"


def test_a_cell_without_imports_keeps_its_magics_first(tmp_path, capsys):
    sources = _fixed_cells(tmp_path, capsys,
                           _code(["%matplotlib inline\n", "!nvidia-smi\n", "x = m.cuda()"]))
    assert sources == ["%matplotlib inline\n!nvidia-smi\n" + inline_block(["pick_device"])
                       + "\nx = m.to(pick_device())"]


def test_a_new_cell_gets_the_same_id_in_every_run(tmp_path, capsys):
    """nbformat 4.5 cells carry ids: the helper's new cell gets one made from what it holds and
    the ids beside it, so that two fixes of the same notebook write the same bytes (fixing it
    alone and in its tree agree: scripts/parity.py), and it is no id already taken."""
    cells = [{"id": "a1", **_code("print('first')\n")},
             {"id": "b2", **_code("import torch\nx = torch.ones(2).cuda()\n")}]
    written = []
    for name in ("one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        path = folder / "train.ipynb"
        path.write_text(_notebook(*cells))
        main(["check", "--fix", "--no-cache", str(path)])
        capsys.readouterr()
        written.append(path.read_bytes())
    assert written[0] == written[1]
    ids = [cell["id"] for cell in json.loads(written[0])["cells"]]
    assert ids[0] == "a1" and ids[2] == "b2"
    assert len(ids[1]) == 8 and ids[1] not in {"a1", "b2"}

"""A notebook fixed by `cudalint check --fix` still runs, cell magics included, in a real
IPython kernel on this CPU-only machine (where the original fails)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from cudalint.cli import main
from cudalint.runtime.helper import inline_block


def _notebook(*sources: str) -> dict:
    cells = [{"cell_type": "markdown", "id": "intro", "metadata": {},
              "source": ["# Timing the model on the GPU"]}]
    cells += [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
               "outputs": [], "source": source.splitlines(keepends=True)}
              for i, source in enumerate(sources)]
    return {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3",
                                                        "language": "python", "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}


def _execute(path: Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    return notebook


def _outputs(notebook: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code"
                   for o in c.get("outputs", []))


CELLS = (
    # The first code cell starts with a cell magic: the import must not go above it.
    "%%time\nimport torch\nwarm = torch.ones(2).cuda()\n",
    "import torch\n\nx = torch.randn(4, 4).cuda()\n",
    "%%timeit -n 1 -r 1\ny = torch.ones(3, device='cuda')\n",
    "!echo shell-escape-ok\nz = x.cuda(non_blocking=True) @ torch.eye(4, device='cuda:0')\n",
    "print('devices', x.device.type, z.device.type)\n",
)


def test_fixed_notebook_runs_in_an_ipython_kernel(chdir_tmp, capsys):
    path = chdir_tmp / "explore.ipynb"
    path.write_text(json.dumps(_notebook(*CELLS), indent=1) + "\n")
    with pytest.raises(CellExecutionError):
        _execute(path)  # torch has no CUDA here: the original fails

    main(["check", "--fix", str(path)])
    capsys.readouterr()
    cells = json.loads(path.read_text())["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    defined = [s for s in sources if "def pick_device(" in s]
    assert len(defined) == 1  # written once, inline, for every cell
    assert not any("import pick_device" in s for s in sources)
    # The first cell needs the helper and starts with a cell magic, which must stay its first
    # line: the helper is a new first code cell.
    assert sources[0] == inline_block(["pick_device"]).rstrip("\n")
    assert sources[1].startswith("%%time\n")
    assert all(".cuda(" not in s and "'cuda" not in s for s in sources[1:])

    executed = _execute(path)
    assert "shell-escape-ok" in _outputs(executed)
    assert "devices cpu cpu" in _outputs(executed)


def test_the_helper_comes_just_before_the_first_cell_that_needs_it(chdir_tmp, capsys):
    """A cell of its own before that cell's imports: defined even where one of them fails."""
    path = chdir_tmp / "train.ipynb"
    path.write_text(json.dumps(_notebook(*CELLS[1:]), indent=1) + "\n")
    main(["check", "--fix", str(path)])
    capsys.readouterr()
    sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"][1:]]
    assert sources[:2] == [inline_block(["pick_device"]).rstrip("\n"),
                           "import torch\n\nx = torch.randn(4, 4).to(pick_device())\n"]
    assert sum("def pick_device(" in s for s in sources) == 1
    assert "devices cpu cpu" in _outputs(_execute(path))

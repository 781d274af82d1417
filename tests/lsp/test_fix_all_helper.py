"""Fix-all in a package the CLI has not fixed yet: the workspace edit creates (or extends) the
device helper beside the fixed module, as `cudalint check --fix` writes it, and the result
imports where cudalint cannot be imported. A client without file creation imports the helper
where it defines what the fixes need, and gets it inline otherwise."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from cudalint.runtime.helper import INLINE_BEGIN, helper_module_text, module_names
from tests.lsp.client import Client, Document, apply_edits
from tests.warm_python import WarmPython

CREATES = {"workspace": {"workspaceEdit": {"documentChanges": True,
                                           "resourceOperations": ["create"]}}}
MODEL = "import torch\n\n\ndef build():\n    return torch.nn.Linear(2, 2).cuda()\n"
BENCH = "import torch\n\n\ndef wait():\n    torch.cuda.synchronize()\n"
NO_CUDALINT = ("import sys\n"
               "class Block:\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               "        if name.split('.')[0] == 'cudalint':\n"
               "            raise ModuleNotFoundError(name)\n"
               "sys.meta_path.insert(0, Block())\n")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "Mes projets" / "lab"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "lab"\n')
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "model.py").write_text(MODEL)
    (root / "pkg" / "bench.py").write_text(BENCH)
    return root


def _fix_all(root: Path, path: Path, capabilities: dict[str, Any]) -> dict[str, Any]:
    with (root.parent / "server.log").open("ab") as log:
        client = Client(root, log)
        try:
            client.initialize(root, capabilities)
            doc = Document(client, path, path.read_text())
            doc.diagnostics()
            [action] = doc.actions(only=["source.fixAll"])
            return action
        finally:
            client.kill()


def _apply(action: dict[str, Any]) -> None:
    """What the editor does with the workspace edit: create, then edit each file."""
    for change in action["edit"]["documentChanges"]:
        uri = change["uri"] if "uri" in change else change["textDocument"]["uri"]
        path = Path(unquote(uri.removeprefix("file://")))
        if change.get("kind") == "create":
            assert not path.exists()
            path.write_text("")
            continue
        path.write_text(apply_edits(path.read_text(), change["edits"]))


def _imports(warm: WarmPython, root: Path, module: str) -> subprocess.CompletedProcess[str]:
    """`python -c 'import MODULE'` in root, forked from a process that imported torch."""
    code = NO_CUDALINT + f"import {module}\nprint({module}.__name__)\n"
    return warm.run(["-c", code], cwd=root, env=dict(os.environ))


def test_fix_all_creates_the_helper_and_the_package_imports(project: Path,
                                                            warm_python: WarmPython) -> None:
    model = project / "pkg" / "model.py"
    assert _imports(warm_python, project, "pkg.model").returncode == 0
    action = _fix_all(project, model, CREATES)
    assert action["title"].endswith("(creates the device helper _device.py)")
    kinds = [change.get("kind", "edit") for change in action["edit"]["documentChanges"]]
    assert kinds == ["create", "edit", "edit"]
    _apply(action)
    helper = project / "pkg" / "_device.py"
    assert helper.read_text() == helper_module_text(["pick_device"])  # as the CLI writes it
    assert "from pkg._device import pick_device" in model.read_text()
    done = _imports(warm_python, project, "pkg.model")
    assert done.returncode == 0, done.stderr

    # A later fix that needs more extends the helper in the same change.
    bench = project / "pkg" / "bench.py"
    action = _fix_all(project, bench, CREATES)
    assert action["title"].endswith("(extends the device helper _device.py)")
    _apply(action)
    assert module_names(helper.read_text()) == {"pick_device", "synchronize"}
    for module in ("pkg.model", "pkg.bench"):
        done = _imports(warm_python, project, module)
        assert done.returncode == 0, done.stderr


def test_a_client_that_cannot_create_files_gets_the_helper_inline(project: Path) -> None:
    model = project / "pkg" / "model.py"
    action = _fix_all(project, model, {})
    edits = action["edit"]["changes"]
    assert list(edits) == [model.as_uri()]
    fixed = apply_edits(MODEL, edits[model.as_uri()])
    assert INLINE_BEGIN in fixed and "import pick_device" not in fixed
    assert not (project / "pkg" / "_device.py").exists()


def test_a_client_that_cannot_create_files_imports_a_helper_defining_what_it_needs(
        project: Path, warm_python: WarmPython) -> None:
    """The helper an earlier `cudalint check --fix` wrote for another module holds
    `pick_device` only: a fix needing it imports it, as that command would; one needing
    `synchronize`, which the editor cannot add there, carries it inline."""
    helper = project / "pkg" / "_device.py"
    helper.write_text(helper_module_text(["pick_device"]))
    model, bench = project / "pkg" / "model.py", project / "pkg" / "bench.py"
    edits = _fix_all(project, model, {})["edit"]["changes"]
    assert list(edits) == [model.as_uri()]
    model.write_text(apply_edits(MODEL, edits[model.as_uri()]))
    assert "from pkg._device import pick_device\n" in model.read_text()
    assert INLINE_BEGIN not in model.read_text()
    edits = _fix_all(project, bench, {})["edit"]["changes"]
    bench.write_text(apply_edits(BENCH, edits[bench.as_uri()]))
    assert INLINE_BEGIN in bench.read_text() and "_device import" not in bench.read_text()
    assert helper.read_text() == helper_module_text(["pick_device"])  # left as it was
    for module in ("pkg.model", "pkg.bench"):
        done = _imports(warm_python, project, module)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("folder", ["Mes projets", "thèse", "run+1"])
def test_a_path_that_needs_escaping_in_a_uri_gets_diagnostics_and_actions(
        tmp_path: Path, folder: str) -> None:
    """The client sends `Mes%20projets`, `th%C3%A8se`, `run%2B1`; pygls keys documents by the
    unquoted URI: the server must still find the document it was sent."""
    root = tmp_path / folder
    root.mkdir()
    path = root / "train.py"
    path.write_text(MODEL)
    with (tmp_path / "server.log").open("ab") as log:
        client = Client(root, log)
        try:
            client.initialize(root)
            doc = Document(client, path, MODEL)
            assert "%" in doc.uri
            [diagnostic] = doc.diagnostics()
            assert diagnostic["code"] == "CUD102"
            assert any(a["title"].startswith("Fix CUD102") for a in doc.actions(diagnostic))
        finally:
            client.kill()

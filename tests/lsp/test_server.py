"""The server as an editor runs it: a subprocess speaking JSON-RPC over stdio."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cudalint.engine.reading.depth import TOO_DEEP
from cudalint.runtime.helper import write_helper
from tests.engine.test_deep_chains import DEEP
from tests.lsp.client import Client, Document, cli_fixed

TWO_PROBLEMS = (
    "import torch\n"
    "\n"
    "model = torch.nn.Linear(2, 2).cuda()\n"
    'x = torch.zeros(2, device="cuda:0")\n'
)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A flat project with the standalone helper (as `cudalint init-helper _device.py` writes
    it), which the editor's fixes import, as the CLI's do."""
    folder = tmp_path_factory.mktemp("workspace")
    write_helper(folder / "_device.py", force=False)
    return folder


@pytest.fixture(scope="module")
def servers(workspace: Path) -> Iterator[tuple[Client, Client]]:
    """Two servers, started together so that they boot at the same time: the editor's usual
    UTF-16 one, and one for a client that prefers UTF-32."""
    utf32 = workspace / "utf32"
    utf32.mkdir()
    write_helper(utf32 / "_device.py", force=False)
    with (workspace / "server.log").open("wb") as log:
        clients = (Client(workspace, log), Client(utf32, log))
        try:
            yield clients
        finally:
            for client in clients:
                client.kill()


@pytest.fixture(scope="module")
def server(servers: tuple[Client, Client], workspace: Path) -> Client:
    servers[0].initialize(workspace)
    return servers[0]


def by_code(diagnostics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d.get("code", "error"): d for d in diagnostics}


def span(line: int, text: str, needle: str) -> dict[str, Any]:
    start = text.splitlines()[line].index(needle)
    return {"start": {"line": line, "character": start},
            "end": {"line": line, "character": start + len(needle)}}


def test_open_publishes_findings_and_change_clears_them(server: Client, workspace: Path) -> None:
    doc = Document(server, workspace / "train.py", TWO_PROBLEMS)
    found = by_code(doc.diagnostics())
    assert sorted(found) == ["CUD101", "CUD102"]
    cuda = found["CUD102"]
    assert cuda["range"] == span(2, TWO_PROBLEMS, "cuda")
    assert cuda["severity"] == 1
    assert cuda["source"] == "cudalint"
    assert cuda["codeDescription"]["href"].endswith("/CUD102/")
    assert "tags" not in cuda
    assert cuda["data"]["fix"]["applicability"] == "safe"
    # Diagnostics name their fix; its edits are made only when an action is asked for.
    assert "edits" not in cuda["data"]["fix"] and cuda["data"]["noqa"] is None
    assert found["CUD101"]["range"] == span(3, TWO_PROBLEMS, '"cuda:0"')

    assert doc.change("import torch\n\nmodel = torch.nn.Linear(2, 2)\n") == []
    # The script checked before the first document (lsp/rehearsal.py) was never published.
    assert {uri for uri, _ in server.published} == {doc.uri}


def test_quick_fix_equals_the_cli_fix(server: Client, workspace: Path) -> None:
    text = "import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\n"
    doc = Document(server, workspace / "model.py", text)
    [diagnostic] = doc.diagnostics()
    actions = {a["title"]: a for a in doc.actions(diagnostic)}
    fix = actions["Fix CUD102: Replace with `.to(pick_device())`"]
    assert fix["kind"] == "quickfix"
    assert fix["isPreferred"] is True
    assert fix["diagnostics"][0]["code"] == "CUD102"
    assert doc.apply(fix) == cli_fixed(workspace, text)
    assert "Disable CUD102 for this line" in actions


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_fix_all_equals_the_cli_fix(server: Client, workspace: Path, newline: str) -> None:
    text = TWO_PROBLEMS.replace("\n", newline)
    doc = Document(server, workspace / f"fix_all_{len(newline)}.py", text)
    doc.diagnostics()
    [action] = doc.actions(only=["source.fixAll"])
    assert action["kind"] == "source.fixAll.cudalint"
    fixed = doc.apply(action)
    assert fixed == cli_fixed(workspace, text)
    assert fixed.count(newline) == fixed.count("\n") > 3
    assert doc.change(fixed) == []
    assert doc.actions(only=["source.fixAll"]) == []


def test_non_ascii_line_counts_utf16_code_units(server: Client, workspace: Path) -> None:
    text = 's = "é😋"; m.cuda()\n'
    doc = Document(server, workspace / "accents.py", text)
    [diagnostic] = doc.diagnostics()
    # "é" is one UTF-16 code unit and "😋" two: `cuda` starts at code point 12, unit 13.
    assert diagnostic["range"]["start"] == {"line": 0, "character": 13}
    assert diagnostic["range"]["end"] == {"line": 0, "character": 17}
    fix = next(a for a in doc.actions(diagnostic) if a["title"].startswith("Fix CUD102"))
    assert doc.apply(fix) == cli_fixed(workspace, text)


def test_noqa_action_appends_or_merges(server: Client, workspace: Path) -> None:
    text = "a = x.cuda()\nb = y.cuda()  # noqa: CUD101\n"
    doc = Document(server, workspace / "noqa.py", text)
    first, second = doc.diagnostics()
    disable = [a for a in doc.actions(first) if a["title"] == "Disable CUD102 for this line"]
    assert doc.apply(disable[0]).splitlines()[0] == "a = x.cuda()  # noqa: CUD102"
    disable = [a for a in doc.actions(second) if a["title"] == "Disable CUD102 for this line"]
    merged = doc.apply(disable[0])
    assert merged.splitlines()[1] == "b = y.cuda()  # noqa: CUD101, CUD102"
    assert len(doc.change(merged)) == 1


def test_syntax_error_is_a_diagnostic_and_the_server_lives_on(
    server: Client, workspace: Path
) -> None:
    doc = Document(server, workspace / "broken.py", "def f(:\n    x.cuda()\n")
    [error] = doc.diagnostics()
    assert error["message"].startswith("SyntaxError")
    assert error["severity"] == 1
    assert "code" not in error
    assert doc.actions(error) == []
    assert [d["code"] for d in doc.change("def f():\n    x.cuda()\n")] == ["CUD102"]


@pytest.mark.parametrize("name", list(DEEP))
def test_a_deep_chain_is_one_diagnostic_and_the_server_lives_on(
    server: Client, workspace: Path, name: str
) -> None:
    """Chains that `ast` keeps flat and LibCST nests (an 8,000-term `and`): the server
    segfaulted in LibCST's native parser."""
    doc = Document(server, workspace / f"{name}.py", DEEP[name])
    [error] = doc.diagnostics()
    assert error["message"] == TOO_DEEP
    assert error["severity"] == 1
    assert [d["code"] for d in doc.change("x.cuda()\n")] == ["CUD102"]
    # and an edit that makes it deep again, read incrementally from the shallow text
    [again] = doc.change("x.cuda()\n" + DEEP[name])
    assert again["message"] == TOO_DEEP
    assert server.process.poll() is None


def test_configuration_is_read_and_reloaded_on_save(server: Client, workspace: Path) -> None:
    project = workspace / "project"
    project.mkdir()
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[tool.cudalint]\nignore = ["CUD101"]\n', encoding="utf-8")
    doc = Document(server, project / "run.py", TWO_PROBLEMS)
    assert [d["code"] for d in doc.diagnostics()] == ["CUD102"]
    pyproject.write_text('[tool.cudalint]\nignore = ["CUD102"]\n', encoding="utf-8")
    server.notify("textDocument/didSave", {"textDocument": {"uri": pyproject.as_uri()}})
    assert [d["code"] for d in doc.diagnostics()] == ["CUD101"]
    pyproject.write_text('[tool.cudalint]\nignores = ["CUD102"]\n', encoding="utf-8")
    server.notify("textDocument/didSave", {"textDocument": {"uri": pyproject.as_uri()}})
    [error] = doc.diagnostics()
    assert "unknown key in [tool.cudalint]: 'ignores'" in error["message"]


def test_excluded_notebook_and_unknown_files_get_no_diagnostics(
    server: Client, workspace: Path
) -> None:
    library = workspace / ".venv" / "lib.py"
    library.parent.mkdir()
    library.write_text("x.cuda()\n", encoding="utf-8")
    assert Document(server, library, "x.cuda()\n").diagnostics() == []
    notebook = Document(server, workspace / "nb.ipynb", '{"cells": [], "x": "cuda"}', "json")
    assert notebook.diagnostics() == []
    readme = Document(server, workspace / "README.md", "x.cuda()\n", "markdown")
    assert readme.diagnostics() == []


def test_requirements_are_checked_too(server: Client, workspace: Path) -> None:
    doc = Document(server, workspace / "requirements.txt", "cupy-cuda12x==13.0\n")
    [diagnostic] = doc.diagnostics()
    assert diagnostic["code"].startswith("CUD")
    disable = [a for a in doc.actions(diagnostic) if a["title"].startswith("Disable")]
    assert doc.apply(disable[0]) == f"cupy-cuda12x==13.0  # noqa: {diagnostic['code']}\n"


def test_dockerfile_noqa_goes_above_the_instruction(server: Client, workspace: Path) -> None:
    text = ("FROM nvidia/cuda:12.1.0-runtime-ubuntu22.04\n"
            "RUN pip install \\\n    cupy-cuda12x\n")
    doc = Document(server, workspace / "Dockerfile", text, "dockerfile")
    image, wheel = doc.diagnostics()
    assert (image["range"]["start"]["line"], wheel["range"]["start"]["line"]) == (0, 2)
    disable = next(a for a in doc.actions(wheel) if a["title"].startswith("Disable"))
    silenced = doc.apply(disable)
    assert silenced.splitlines()[1] == f"# noqa: {wheel['code']}"
    assert [d["code"] for d in doc.change(silenced)] == [image["code"]]


def test_utf32_when_the_client_prefers_it_then_shutdown_and_exit(
    servers: tuple[Client, Client], workspace: Path
) -> None:
    client, folder = servers[1], workspace / "utf32"
    result = client.initialize(folder, {"general": {"positionEncodings": ["utf-32", "utf-16"]}})
    capabilities = result["capabilities"]
    assert capabilities["positionEncoding"] == "utf-32"
    assert capabilities["textDocumentSync"]["save"]
    assert "source.fixAll.cudalint" in capabilities["codeActionProvider"]["codeActionKinds"]
    doc = Document(client, folder / "accents.py", 's = "é😋"; m.cuda()\n')
    [diagnostic] = doc.diagnostics()
    assert diagnostic["range"]["start"] == {"line": 0, "character": 12}
    assert client.shutdown() == 0


def test_missing_pygls_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cudalint.lsp import server

    monkeypatch.setattr(server.importlib.util, "find_spec", lambda name: None)
    assert server.main([]) == 2
    assert capsys.readouterr().err == (
        "cudalint lsp: error: pygls is not installed; pip install 'cudalint[lsp]'\n")


@pytest.mark.skipif(shutil.which("cudalint") is None or os.name != "posix", reason="no script")
def test_console_script_help() -> None:
    import subprocess

    done = subprocess.run(["cudalint", "lsp", "--help"], capture_output=True, timeout=30,
                          check=False)
    assert done.returncode == 0
    assert b"--stdio" in done.stdout

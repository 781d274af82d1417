"""The editor reads a file's project as `cudalint check` does (issue 40): its own packages from
its root, and the scan of the whole project, which a saved module can change."""

from __future__ import annotations

from pathlib import Path

from tests.lsp.client import Client, Document

MOD = "import torch\nfrom flash_attn import ops\n\n\ndef run(x):\n    return ops.f(x.cuda())\n"
SENSOR = "class Sensor:\n    def cuda(self):\n        return self\n"


def test_the_editor_reads_the_project_and_a_saved_module_changes_it(tmp_path: Path) -> None:
    root = tmp_path / "flash-attention"
    (root / "flash_attn").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "flash-attn"\n')
    (root / "flash_attn" / "__init__.py").write_text("")
    (root / "flash_attn" / "mod.py").write_text(MOD)
    sensor = root / "tools" / "sensor.py"
    sensor.parent.mkdir()
    sensor.write_text("class Sensor:\n    pass\n")
    with (tmp_path / "server.log").open("wb") as log:
        server = Client(root, log)
        try:
            server.initialize(tmp_path)  # a workspace above the project: its root is found
            doc = Document(server, root / "flash_attn" / "mod.py", MOD)
            [cuda] = doc.diagnostics()  # `from flash_attn import ops`: its own, never CUD201
            assert cuda["code"] == "CUD102"
            assert cuda["data"]["fix"]["applicability"] == "safe"
            sensor.write_text(SENSOR)  # saved in the editor: `x` may be a Sensor now
            server.notify("textDocument/didSave", {"textDocument": {"uri": sensor.as_uri()}})
            [cuda] = doc.diagnostics()
            assert cuda["data"]["fix"]["applicability"] == "unsafe"
            # a buffer in no project (nothing above it marks one): said once per folder
            loose = tmp_path / "loose"
            loose.mkdir()
            for name in ("a.py", "b.py"):
                assert Document(server, loose / name, "x = 1\n").diagnostics() == []
            told = [m["params"]["message"] for m in server.notifications
                    if m.get("method") == "window/logMessage"]
            assert [m for m in told if "lies in no project" in m] == [
                f"cudalint: {loose} lies in no project (no pyproject.toml, setup.py or .git "
                "above it): its own packages, extensions and torch floor are read from the "
                "workspace folder"]
        finally:
            server.kill()

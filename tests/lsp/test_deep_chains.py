"""The language server on chains that `ast` keeps flat and LibCST nests (an 8,000-term `and`):
one diagnostic saying the file is too deep to check, and the server lives on (it segfaulted
in LibCST's native parser)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cudalint.engine.reading.depth import TOO_DEEP
from tests.engine.test_deep_chains import DEEP
from tests.lsp.client import Client, Document

SOURCE = "import torch\n\nx = torch.ones(2).cuda()\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("deep")


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[Client]:
    with (root / "server.log").open("wb") as log:
        client = Client(root, log)
        try:
            client.initialize(root)
            yield client
        finally:
            client.kill()


@pytest.mark.parametrize("name", list(DEEP))
def test_a_deep_chain_is_one_diagnostic_and_the_server_lives_on(server: Client, root: Path,
                                                                name: str) -> None:
    document = Document(server, root / f"{name}.py", DEEP[name])
    [diagnostic] = document.diagnostics()
    assert diagnostic["message"] == TOO_DEEP
    assert diagnostic["severity"] == 1  # error
    assert server.process.poll() is None
    assert [d["code"] for d in document.change(SOURCE)] == ["CUD102"]
    # and an edit that makes it deep again, read incrementally from the shallow text
    [again] = document.change(SOURCE + DEEP[name].replace("import torch\n", "", 1))
    assert again["message"] == TOO_DEEP
    assert server.process.poll() is None

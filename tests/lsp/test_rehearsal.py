"""The script the server checks before the first document: it must reach the rules a training
script reaches (else the first document still pays for them) and stay a valid module."""

from __future__ import annotations

from cudalint.lsp.rehearsal import SCRIPT
from tests.lint import findings


def test_the_rehearsal_reaches_the_usual_rules(tmp_path):
    found = findings(tmp_path, SCRIPT)
    codes = {f.code for f in found}
    assert {"CUD101", "CUD102", "CUD103", "CUD105", "CUD106", "CUD601"} <= codes
    assert sum(f.fix is not None for f in found) >= 8
    # Its noqa comment is honoured: the model's `.cuda()` is not reported, the layer's is.
    cuda_rows = {f.location.row for f in found if f.code == "CUD102"}
    lines = SCRIPT.splitlines()
    assert cuda_rows == {i + 1 for i, line in enumerate(lines)
                         if ".cuda()" in line and "noqa" not in line}

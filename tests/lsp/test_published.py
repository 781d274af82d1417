"""The published diagnostics kept from one version to the next are those `to_diagnostic`
makes for the version, and the server's converter writes them as cattrs would."""

from __future__ import annotations

from pathlib import Path

from pygls.protocol import default_converter

from benchmarks.training_file import training_file
from cudalint.kinds import FileKind
from cudalint.lsp.checker import Projects, check_text
from cudalint.lsp.diagnostics import to_diagnostic
from cudalint.lsp.lines import UTF8, UTF16
from cudalint.lsp.published import Published, converter
from cudalint.lsp.suppress import Noqa


def test_kept_diagnostics_are_made_afresh_for_each_version(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    project = Projects().for_path(path, (tmp_path,))
    published, plain, ours = Published(), default_converter(), converter()
    text = training_file(300)
    lines = text.splitlines(keepends=True)
    middle = next(i for i in range(len(lines) // 2, len(lines)) if lines[i].startswith("def "))
    edited = [
        text,
        text,  # nothing changed: every diagnostic is kept
        "".join([*lines[:middle], "x = torch.zeros(2).cuda()  # é\n", *lines[middle:]]),
        "é = 1; " + text,  # the first line's columns count differently in UTF-16 and UTF-8
    ]
    for version, (source, encoding) in enumerate(
            zip(edited, [UTF16, UTF16, UTF16, UTF8], strict=True)):
        findings = check_text(path, FileKind.PYTHON, source, project)
        noqa = Noqa(source, FileKind.PYTHON)
        made = published.diagnostics(findings, noqa, encoding, version)
        expected = [to_diagnostic(f, noqa, encoding, version, actions=False) for f in findings]
        assert made == expected
        assert [ours.unstructure(d) for d in made] == [plain.unstructure(d) for d in expected]
        assert len(made) > 20

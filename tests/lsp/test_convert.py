"""The pure conversions of the LSP adapter: positions, diagnostics, edits, noqa, action kinds."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from benchmarks.training_file import training_file
from cudalint.finding import Applicability, Edit, Finding, Fix, Position, Severity
from cudalint.kinds import FileKind
from cudalint.lsp.actions import FIX_ALL, Target, quick_fixes, wanted
from cudalint.lsp.checker import Projects, check_text
from cudalint.lsp.diagnostics import data_version, edits_of, text_edits, to_diagnostic
from cudalint.lsp.lines import UTF8, UTF16, UTF32, code_units, split_lines
from cudalint.lsp.positions import end_of, overlaps, to_lsp
from cudalint.lsp.reparse import Reparser
from cudalint.lsp.suppress import Noqa


def finding(row: int, column: int, end_row: int, end_column: int, code: str | None = "CUD102",
            **extra: object) -> Finding:
    return Finding(code, "`.cuda()` only works on an NVIDIA GPU", Path("x.py"),
                   Position(row, column), Position(end_row, end_column), **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize(("encoding", "expected"), [(UTF8, 7), (UTF16, 4), (UTF32, 3)])
def test_code_units(encoding: str, expected: int) -> None:
    assert code_units("aé😋", encoding) == expected


def test_lines_split_as_lsp_counts_them() -> None:
    assert split_lines("a\r\nb\rc\nd\fe\x85f\n") == ["a", "b", "c", "d\fe\x85f", ""]


@pytest.mark.parametrize(("encoding", "character"), [(UTF8, 16), (UTF16, 13), (UTF32, 12)])
def test_to_lsp_counts_the_negotiated_units(encoding: str, character: int) -> None:
    lines = split_lines('s = "é😋"; m.cuda()\n')
    assert to_lsp(lines, Position(1, 13), encoding) == types.Position(0, character)


def test_to_lsp_clamps_past_the_end() -> None:
    lines = split_lines("ab\ncd")
    assert to_lsp(lines, Position(3, 1), UTF16) == types.Position(1, 2)
    assert to_lsp(lines, Position(1, 9), UTF16) == types.Position(0, 2)
    assert end_of(split_lines("ab\n"), UTF16) == types.Position(1, 0)


def test_overlaps_counts_a_cursor_at_either_end() -> None:
    diagnostic = types.Range(types.Position(2, 4), types.Position(2, 8))
    for character, expected in [(3, False), (4, True), (8, True), (9, False)]:
        cursor = types.Range(types.Position(2, character), types.Position(2, character))
        assert overlaps(diagnostic, cursor) is expected


def test_text_edits_sort_and_refuse_overlaps() -> None:
    lines = split_lines("x = a.cuda()\n")
    replace = Edit("a.to(pick_device())", Position(1, 5), Position(1, 13))
    insert = Edit("from cudalint.device import pick_device\n", Position(1, 1), Position(1, 1))
    edits = text_edits([replace, insert], lines, UTF16)
    assert [e.new_text for e in edits] == [insert.content, replace.content]
    clash = Edit("", Position(1, 3), Position(1, 7))
    assert text_edits([replace, clash], lines, UTF16) == []


def test_diagnostic_fields_and_data_round_trip() -> None:
    text = "x = a.cuda()\n"
    fix = Fix(Applicability.UNSAFE, "Replace with `.to(pick_device())`",
              (Edit("a.to(pick_device())", Position(1, 5), Position(1, 13)),))
    found = finding(1, 7, 1, 11, severity=Severity.WARNING, fix=fix).with_guard()
    diagnostic = to_diagnostic(found, Noqa(text, FileKind.PYTHON), UTF16, version=3)
    assert diagnostic.message.endswith(" (guarded)")
    assert diagnostic.severity == types.DiagnosticSeverity.Information
    assert diagnostic.code == "CUD102"
    assert diagnostic.code_description is not None
    assert diagnostic.code_description.href.endswith("/CUD102/")
    assert diagnostic.range == types.Range(types.Position(0, 6), types.Position(0, 10))
    data = diagnostic.data
    assert isinstance(data, dict)
    assert data_version(diagnostic) == 3
    assert data["fix"]["title"] == "Fix CUD102: Replace with `.to(pick_device())` (unsafe)"
    [edit] = edits_of(data["fix"])
    assert edit.range == types.Range(types.Position(0, 4), types.Position(0, 12))
    [action, disable] = quick_fixes(diagnostic, Target("file:///x.py", 3, True))
    assert action.is_preferred is False
    assert disable.title == "Disable CUD102 for this line"
    assert action.edit is not None and action.edit.document_changes is not None
    document_edit = action.edit.document_changes[0]
    assert isinstance(document_edit, types.TextDocumentEdit)
    assert document_edit.text_document.version == 3


def test_an_error_line_has_no_code_and_no_actions() -> None:
    error = finding(1, 7, 1, 7, code=None)
    diagnostic = to_diagnostic(error, Noqa("def f(:\n", FileKind.PYTHON), UTF16)
    assert diagnostic.code is None and diagnostic.code_description is None
    assert quick_fixes(diagnostic, Target("file:///x.py", 1, False)) == []


def _noqa(text: str, found: Finding, kind: FileKind = FileKind.PYTHON) -> str | None:
    edit = Noqa(text, kind).edit(found)
    if edit is None:
        return None
    lines = text.split("\n")
    line = lines[edit.location.row - 1]
    lines[edit.location.row - 1] = (line[: edit.location.column - 1] + edit.content
                                    + line[edit.end_location.column - 1 :])
    return "\n".join(lines)


@pytest.mark.parametrize(("text", "found", "expected"), [
    pytest.param("x = a.cuda()   \n", finding(1, 7, 1, 11),
                 "x = a.cuda()  # noqa: CUD102\n", id="append-trimming-spaces"),
    pytest.param("x = a.cuda()  # noqa: CUD101,CUD105\n", finding(1, 7, 1, 11),
                 "x = a.cuda()  # noqa: CUD101,CUD105, CUD102\n", id="merge"),
    pytest.param("x = a.cuda()  # type: ignore\n", finding(1, 7, 1, 11),
                 "x = a.cuda()  # type: ignore  # noqa: CUD102\n", id="after-another-comment"),
    pytest.param('x = "# noqa: CUD101"; a.cuda()\n', finding(1, 24, 1, 28),
                 'x = "# noqa: CUD101"; a.cuda()  # noqa: CUD102\n', id="noqa-in-a-string"),
    pytest.param('x = f("""\ncuda\n""")\n', finding(1, 7, 3, 4),
                 'x = f("""\ncuda\n""")  # noqa: CUD102\n', id="multi-line-string"),
    pytest.param("x = a.cuda() + \\\n    b\n", finding(1, 7, 1, 11), None, id="backslash"),
    pytest.param("cupy==13  # pinned\n", finding(1, 1, 1, 5, code="CUD201"),
                 "cupy==13  # pinned  # noqa: CUD201\n", id="requirements"),
])
def test_noqa_edit(text: str, found: Finding, expected: str | None) -> None:
    kind = FileKind.REQUIREMENTS if found.code == "CUD201" else FileKind.PYTHON
    assert _noqa(text, found, kind) == expected


def test_no_noqa_where_comments_do_not_silence() -> None:
    assert Noqa("__global__ void k() {}\n", FileKind.CUDA_SOURCE).edit(
        finding(1, 1, 1, 5)) is None


@pytest.mark.parametrize(("only", "expected"), [
    (None, True), ([], True), (["source.fixAll"], True), (["source"], True),
    (["source.fixAll.cudalint"], True), (["quickfix"], False), (["source.organizeImports"], False),
])
def test_fix_all_answers_hierarchical_kinds(only: list[str] | None, expected: bool) -> None:
    assert wanted(FIX_ALL, only) is expected


@pytest.mark.parametrize("name", ["training", "fixtures"])
def test_noqa_tokenizing_statements_alone_as_the_whole_text(name: str, tmp_path: Path) -> None:
    """A code action's noqa edit tokenizes only the top-level statement of its finding: the
    same edit as when the whole text is tokenized, for every finding (multi-line strings,
    backslashes and comments among them)."""
    root = Path(__file__).resolve().parents[2]
    texts = [training_file(300)] if name == "training" else \
        [p.read_text(encoding="utf-8") for p in sorted((root / "fixtures").rglob("*.py"))]
    project = Projects().for_path(tmp_path / "x.py", (tmp_path,))
    compared = 0
    for text in texts:
        findings = check_text(tmp_path / "x.py", FileKind.PYTHON, text, project)
        statements = Reparser().statements(text.encode())
        if statements is None:
            continue
        whole, alone = Noqa(text, FileKind.PYTHON), Noqa(text, FileKind.PYTHON, statements)
        for found in findings:
            assert alone.edit(found) == whole.edit(found), found
            compared += 1
    assert compared > 20

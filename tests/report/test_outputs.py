"""`cudalint report` end to end: terminal, JSON, Markdown and HTML (rendered in Chromium)."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cudalint.cli import main

from .smoke_runs import write_smoke

FIXTURES = Path(__file__).parents[2] / "fixtures" / "report"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _report(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["report", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_terminal_view(capsys) -> None:
    code, out, _ = _report(capsys, str(FIXTURES / "refused"))
    assert code == 0
    assert out.startswith("Decision: MPS refused\nEvidence: provisional: ")
    assert "fusedops/__init__.py:7 CUD305: native CUDA on the main path" in out
    assert "[ ] Data-handling rules respected" in out


def test_json_output(tmp_path: Path, capsys) -> None:
    smoke = write_smoke(tmp_path, "mps.json", device="mps")
    code, out, _ = _report(capsys, str(FIXTURES / "dual_track"), "--smoke", str(smoke),
                           "--output-format", "json")
    assert code == 0
    data = json.loads(out)
    assert (data["verdict"], data["evidence"]) == ("dual-track", "confirmed-on-mps")
    assert data["scope"] == "Mac allowed for single-device work, CUDA for distributed training"
    assert data["reasons"][0]["where"].endswith("train.py:31")
    assert data["paths"]["distributed"]["total"] == 6
    assert data["paths"]["guarded"]["guarded"] == 1
    assert data["fixes"] == {"fix": 4, "unsafe_fixes": 2}
    assert [item["status"] for item in data["checklist"]][-1] == "unchecked"
    assert data["smoke"] == [{"source": str(smoke), "target": "smoke_target.py:train_step",
                              "device": "mps", "passed": True}]


def test_markdown_output(tmp_path: Path, capsys) -> None:
    out_file = tmp_path / "decision.md"
    code, out, _ = _report(capsys, str(FIXTURES / "ready"), "--output-format", "markdown",
                           "-o", str(out_file))
    assert (code, out) == (0, "")
    text = out_file.read_text()
    assert text.startswith("# cudalint migration decision\n\n**Decision: Mac allowed**\n")
    assert "*Evidence: provisional*" in text
    assert "- [ ] **Data-handling rules respected" in text
    assert "- [x] **Dependencies install on macOS" in text
    assert "| main | 3 | 3 | 0 | 0 | 0 | 0 | 0 |" in text


def test_errors_are_one_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    code, _, err = _report(capsys, str(FIXTURES / "ready"), "--smoke", str(bad))
    assert code == 2
    assert err == f"cudalint report: error: {bad}: not a smoke report (no 'verdict')\n"
    code, _, err = _report(capsys, str(FIXTURES / "ready"), "--output-format", "pdf")
    assert code == 2 and err.startswith("cudalint report: error: argument --output-format")


class _Dom(HTMLParser):
    """What a rendered page holds: elements by id, the bars of each chart, table rows."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: dict[str, dict[str, str | None]] = {}
        self.bars: dict[str, list[dict[str, str | None]]] = {}
        self.rows: dict[str, int] = {}
        self._svg: str | None = None
        self._table: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        ident = attributes.get("id")
        if ident:
            self.ids[ident] = {"tag": tag, **attributes}
        if tag == "svg":
            self._svg = ident
        elif tag == "table":
            self._table = ident
        elif tag == "rect" and self._svg:
            self.bars.setdefault(self._svg, []).append(attributes)
        elif tag == "tr" and self._table:
            self.rows[self._table] = self.rows.get(self._table, 0) + 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._svg = None
        elif tag == "table":
            self._table = None


def _render(html: Path, tmp_path: Path) -> str:
    browser = next((found for name in BROWSERS if (found := shutil.which(name))), None)
    if browser is None:
        pytest.skip("Chromium is not installed (apt-get install chromium): the HTML report "
                    "was not rendered")
    result = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path}",
         "--dump-dom", html.as_uri()],
        capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_html_renders_in_headless_chromium(tmp_path: Path, capsys) -> None:
    smoke = write_smoke(tmp_path, "cpu.json", device="cpu", skipped=("compare",))
    page = tmp_path / "decision.html"
    code, _, _ = _report(capsys, str(FIXTURES / "refused"), "--smoke", str(smoke),
                         "--output-format", "html", "-o", str(page))
    assert code == 0
    assert "<script" not in page.read_text() and "http" not in page.read_text().replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    dom = _Dom()
    dom.feed(_render(page, tmp_path / "profile"))
    verdict = dom.ids["verdict"]
    assert (verdict["data-verdict"], verdict["data-evidence"]) == ("mps-refused", "provisional")
    families = {(bar["data-label"], bar["data-effort"]): bar["data-count"]
                for bar in dom.bars["chart-families"]}
    assert families == {("CUD1", "fixable"): "2", ("CUD3", "blocker"): "3"}
    effort = {bar["data-label"]: bar["data-count"] for bar in dom.bars["chart-effort"]}
    assert effort == {"fixable": "2", "blocker": "3"}
    assert {bar["data-label"] for bar in dom.bars["chart-directories"]} == {
        ".", "csrc", "fusedops"}
    assert dom.rows["checklist-table"] == 1 + 8
    assert dom.rows["findings-table"] == 1 + 5
    assert dom.rows["reasons-table"] == 1 + 3


def test_a_real_cpu_smoke_run_shows_portability(tmp_path: Path, capsys) -> None:
    smoke = tmp_path / "smoke-cpu.json"
    resumable = Path(__file__).parents[1] / "runtime" / "smoke" / "targets" / "resumable.py"
    assert main(["smoke", f"{resumable}:train", "--in-process", "--batch-sizes", "1,8",
                 "--json", str(smoke)]) == 0
    capsys.readouterr()
    code, out, _ = _report(capsys, str(FIXTURES / "ready"), "--smoke", str(smoke),
                           "--output-format", "json")
    data = json.loads(out)
    assert (code, data["verdict"], data["evidence"]) == (0, "mac-allowed", "portable-on-cpu")
    assert "not that MPS works" in data["evidence_note"]
    ramp = [note for note in data["notes"] if "batch-ramp" in note["text"]]
    assert ramp and "every batch size fits (1, 8), largest 8" in ramp[0]["text"]
    assert ramp[0]["where"] == str(smoke)

"""`cudalint report` end to end: terminal, JSON, Markdown and HTML (rendered in Chromium)."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cudalint.cli import main

from .smoke_runs import stamp, write_smoke

FIXTURES = Path(__file__).parents[2] / "fixtures" / "report"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _report(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["report", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_terminal_view(capsys) -> None:
    code, out, _ = _report(capsys, str(FIXTURES / "refused"))
    assert code == 0
    assert out.startswith("cudalint migration decision: fusedops\nfusedops at ")
    assert "\nDecision: MPS refused — holds after `cudalint check --fix`, which removes 2 " \
           "finding(s)\nEvidence: provisional: " in out
    assert "fusedops/__init__.py:7 CUD305: native CUDA on the main path" in out
    assert "[ ] Data-handling rules respected" in out


def test_json_output(tmp_path: Path, capsys) -> None:
    smoke = write_smoke(tmp_path, "mps.json", device="mps", root=FIXTURES / "dual_track")
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
    [run] = data["smoke"]
    assert {key: run[key] for key in ("source", "target", "device", "passed", "current")} == {
        "source": str(smoke), "target": "smoke_target.py:train_step", "device": "mps",
        "passed": True, "current": True}
    assert run["machine"] == "Apple M3 Max, Darwin 15.1 arm64, torch 2.13.0, Python 3.12.4"
    assert data["title"] == "cudalint migration decision: dual_track"
    assert data["project"]["name"] == "dual_track" and data["project"]["cudalint"]


def test_markdown_output(tmp_path: Path, capsys) -> None:
    out_file = tmp_path / "decision.md"
    code, out, _ = _report(capsys, str(FIXTURES / "ready"), "--output-format", "markdown",
                           "-o", str(out_file))
    assert (code, out) == (0, "")
    text = out_file.read_text()
    assert text.startswith("# cudalint migration decision: ready\n\nready at ")
    assert "\n**Decision: Mac allowed — holds after `cudalint check --fix`, which removes 3 " \
           "finding(s)**\n" in text
    assert "*Evidence: provisional*" in text
    assert "- [ ] **Data-handling rules respected" in text
    assert "- [x] **Dependencies install on macOS" in text
    assert "| main | 3 | 3 | 0 | 0 | 0 | 0 | 0 |" in text


def test_errors_are_one_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    code, _, err = _report(capsys, str(FIXTURES / "ready"), "--smoke", str(bad))
    assert code == 2
    assert err == f"cudalint report: error: {bad}: not a smoke report (not a JSON object)\n"
    code, _, err = _report(capsys, str(FIXTURES / "ready"), "--output-format", "pdf")
    assert code == 2 and err.startswith("cudalint report: error: argument --output-format")


class _Dom(HTMLParser):
    """What a rendered page holds: elements by id, the bars of each chart, table rows."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: dict[str, dict[str, str | None]] = {}
        self.bars: dict[str, list[dict[str, str | None]]] = {}
        self.rows: dict[str, int] = {}
        self.texts: dict[str, list[str]] = {}
        self.cells: dict[str, dict[str, dict[str, str | None]]] = {}
        self._svg: str | None = None
        self._table: str | None = None
        self._row: list[str] = []
        self._column: str | None = None

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
            self._row = []
        elif tag == "td" and self._table:
            self._row.append("")
            if "data-status" in attributes and self._row:
                question = self._first
                self.cells.setdefault(self._table, {}).setdefault(question, {})[
                    str(attributes.get("data-column"))] = attributes["data-status"]

    @property
    def _first(self) -> str:
        return self._row[0].strip() if self._row else ""

    def handle_data(self, data: str) -> None:
        if self._table:
            self.texts.setdefault(self._table, []).append(data)
            if self._row:
                self._row[-1] += data

    def text_of(self, table: str) -> str:
        return " ".join("".join(self.texts.get(table, [])).split())

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
    smoke = write_smoke(tmp_path, "cpu.json", device="cpu", skipped=("compare",),
                        root=FIXTURES / "refused")
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
    # The smoke target inside the project, so that the run describes it.
    project = tmp_path / "ready"
    shutil.copytree(FIXTURES / "ready", project)
    resumable = Path(__file__).parents[1] / "runtime" / "smoke" / "targets" / "resumable.py"
    shutil.copy(resumable, project / "resumable.py")
    smoke = tmp_path / "smoke-cpu.json"
    assert main(["smoke", f"{project / 'resumable.py'}:train", "--in-process", "--batch-sizes",
                 "1,8", "--json", str(smoke)]) == 0
    capsys.readouterr()
    smoke.write_text(json.dumps(stamp(json.loads(smoke.read_text()), project)))
    code, out, _ = _report(capsys, str(project), "--smoke", str(smoke), "--output-format", "json")
    data = json.loads(out)
    assert (code, data["verdict"], data["evidence"]) == (0, "mac-allowed", "portable-on-cpu")
    assert data["smoke"][0]["stale"] == []
    assert "not that MPS works" in data["evidence_note"]
    ramp = [note for note in data["notes"] if "batch-ramp" in note["text"]]
    assert ramp and "every batch size fits (1, 8), largest 8" in ramp[0]["text"]
    assert ramp[0]["where"] == str(smoke)


def metrics_tolerance(data: dict) -> str:
    metrics = next(row for row in data["tested"]["rows"] if row["question"] == "metrics reproduce")
    return metrics["cells"]["cuda-reference"]["tolerance"]


REFERENCE = (Path(__file__).parents[2] / "fixtures" / "demo" / "references"
             / "train_step_h200_cuda.safetensors")


def test_a_comparison_with_the_cuda_reference_is_shown(demo: Path, tmp_path: Path,
                                                        capsys) -> None:
    """The fixed demo run here on the CPU against the reference saved on an NVIDIA H200: the
    sheet shows the comparison, the reference's device and torch, the largest difference and
    the tolerance, in every format (the HTML rendered in Chromium)."""
    main(["check", "--fix", str(demo)])
    smoke = tmp_path / "smoke-cpu.json"
    assert main(["smoke", f"{demo / 'smoke_target.py'}:train_step", "--device", "cpu",
                 "--reference", str(REFERENCE), "--json", str(smoke)]) == 0
    capsys.readouterr()
    # Where the harness does not write the identity fields yet, as it will.
    smoke.write_text(json.dumps(stamp(json.loads(smoke.read_text()), demo)))
    code, out, _ = _report(capsys, str(demo), "--smoke", str(smoke), "--output-format", "json")
    data = json.loads(out)
    assert code == 0 and data["smoke"][0]["current"], data["smoke"][0]["stale"]
    comparison = data["smoke"][0]["comparison"]
    assert (comparison["status"], comparison["against"], comparison["device"],
            comparison["device_name"], comparison["torch"]) == (
        "pass", "reference", "cuda", "NVIDIA H200", "2.11.0+cu130")
    largest = comparison["largest_abs_diff"]
    assert float(largest) < 1e-4 and comparison["output"]
    tolerance = data["smoke"][0]["tolerance"]
    assert {"rtol", "atol", "source"} <= set(tolerance)
    # The numbers applied to each output, the per-dtype defaults included, and their source.
    stated = ("rtol=1.3e-06, atol=1e-05 (loss, logits); defaulted per dtype: no "
              "[tool.cudalint.smoke] declares one")
    assert [(row["output"], row["rtol"], row["atol"]) for row in
            json.loads(smoke.read_text())["differences"]] == [("loss", 1.3e-06, 1e-05),
                                                               ("logits", 1.3e-06, 1e-05)]
    assert metrics_tolerance(data) == stated
    metrics = next(row for row in data["tested"]["rows"] if row["question"] == "metrics reproduce")
    assert metrics["cells"]["cuda-reference"]["status"] == "pass"
    assert metrics["cells"]["cpu"]["status"] == "pass"
    for output_format in ("text", "markdown"):
        _, out, _ = _report(capsys, str(demo), "--smoke", str(smoke), "--output-format",
                            output_format)
        assert "cuda (NVIDIA H200), torch 2.11.0+cu130" in out and largest in out
        assert "tolerance" in out

    page = tmp_path / "decision.html"
    assert _report(capsys, str(demo), "--smoke", str(smoke), "--output-format", "html", "-o",
                   str(page))[0] == 0
    dom = _Dom()
    dom.feed(_render(page, tmp_path / "profile"))
    assert dom.rows["comparisons-table"] == 1 + 1
    text = dom.text_of("comparisons-table")
    assert "cuda (NVIDIA H200), torch 2.11.0+cu130" in text
    assert largest in text and "pass" in text
    assert stated in text
    # The pictures: the loss at each of the training check's steps, and each output's largest
    # difference against its tolerance (within it: green; the H200 reference has no losses).
    assert dom.ids["loss-chart-0"]["data-steps"] == "2"
    assert dom.ids["loss-chart-0"]["data-reference"] == "0"
    bars = {bar["data-output"]: bar for bar in dom.bars["difference-chart-0"]}
    assert set(bars) == {"loss", "logits"}
    assert all(bar["data-within"] == "true" and float(str(bar["data-largest"])) < 1e-5
               for bar in bars.values())
    assert dom.cells["tested-table"]["metrics reproduce (compare)"]["cuda-reference"] == "pass"
    # The demo's training step trains: its training check answers the row, on the CPU.
    assert dom.cells["tested-table"]["training updates the weights (training)"]["cpu"] == "pass"

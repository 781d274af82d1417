"""Counts and severities that agree: the footer before and after --fix, and each finding's
severity (and "guarded") the same in every format, in `rule` and in the docs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from cudalint.cli import main
from cudalint.rules import rule_by_code

GUARDED = (
    "import torch\n"
    "\n"
    "def step(model, batch):\n"
    "    if torch.cuda.is_available():\n"
    "        torch.cuda.synchronize()\n"
    "    return model(batch.cuda())\n"
)


def _run(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def _footer(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(("Found", "All checks")))


def test_footer_counts_by_severity_and_agrees_before_and_after_fix(demo, capsys, monkeypatch):
    monkeypatch.chdir(demo)
    _, listed = _run(capsys, "check", "--output-format", "json", ".")
    severities = [f["severity"] for f in json.loads(listed)]
    _, plain = _run(capsys, "check", ".")
    footer = _footer(plain)
    expected = (f"Found {len(severities)} findings: {severities.count('error')} errors, "
                f"{severities.count('warning')} warnings, {severities.count('info')} info.")
    assert footer == expected
    fixable = int(re.search(r"\[\*\] (\d+) fixable", plain).group(1))

    _, fixing = _run(capsys, "check", "--fix", ".")
    fixed_footer = _footer(fixing)
    assert fixed_footer.startswith(expected[:-1] + " (")  # the same numbers as without --fix
    fixed, remaining = map(int, re.search(r"\((\d+) fixed, (\d+) remaining\)\.$",
                                          fixed_footer).groups())
    assert fixed + remaining == len(severities)
    assert fixed == fixable > 0

    code, after = _run(capsys, "check", "--output-format", "json", ".")
    assert code == 1 and len(json.loads(after)) == remaining


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
_COLLECTIONS = ("layouts", "report")  # folders of projects; every other folder is one
PROJECTS = sorted(
    [p for p in FIXTURES.iterdir() if p.is_dir() and p.name not in _COLLECTIONS]
    + [p for name in _COLLECTIONS for p in (FIXTURES / name).iterdir() if p.is_dir()])


def _fixable(out: str) -> tuple[int, int]:
    """The footer's safe and hidden (unsafe) fixable counts."""
    safe = re.search(r"^\[\*\] (\d+) fixable with the `--fix` option", out, re.M)
    hidden = re.search(r"^\((\d+) (?:hidden fix|more fixable)", out, re.M)
    return (int(safe.group(1)) if safe else 0), (int(hidden.group(1)) if hidden else 0)


def _fixed(out: str) -> int:
    found = re.search(r"^Found .*\((\d+) fixed, \d+ remaining\)\.$", out, re.M)
    return int(found.group(1)) if found else 0


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixable_count_is_what_fix_then_fixes(project, tmp_path, capsys, monkeypatch):
    """"N fixable" (and the hidden fixes) before fixing is what --fix (--unsafe-fixes), and
    --diff, then count as fixed in every fixture project: a finding that another finding's
    fix makes go (CUD109 on the call CUD105's fix replaces) is counted too."""
    copies = {}
    for mode in ("check", "fix", "unsafe"):
        copies[mode] = tmp_path / mode
        shutil.copytree(project, copies[mode], ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(copies["check"])
    safe, hidden = _fixable(_run(capsys, "check", "--no-cache", ".")[1])
    _, diff = _run(capsys, "check", "--no-cache", "--diff", ".")
    would = re.search(r"^Would fix (\d+)", diff, re.M)
    assert (int(would.group(1)) if would else 0) == safe
    monkeypatch.chdir(copies["fix"])
    _, fixing = _run(capsys, "check", "--no-cache", "--fix", ".")
    assert _fixed(fixing) == safe
    _, then_unsafe = _run(capsys, "check", "--no-cache", "--unsafe-fixes", ".")
    assert _fixed(then_unsafe) == _fixable(fixing)[1]  # the hidden fixes --fix left
    monkeypatch.chdir(copies["unsafe"])
    assert _fixed(_run(capsys, "check", "--no-cache", "--unsafe-fixes", ".")[1]) \
        == safe + hidden


def test_fixable_count_names_the_findings_another_fix_removes(chdir_tmp, capsys):
    (chdir_tmp / "train.py").write_text(
        "import torch\nx = y.cuda(device=rank)\ntorch.cuda.synchronize()\n")
    _, out = _run(capsys, "check", "--output-format", "concise", ".")
    # CUD109 has no fix, CUD113 an unsafe one: the safe fixes of CUD102 and CUD105 remove both
    assert [line.split()[1] for line in out.splitlines()[:4]] == [
        "CUD102", "CUD113", "CUD105", "CUD109"]
    assert out.splitlines()[4:] == [
        "Found 4 findings: 3 errors, 1 info.",
        "[*] 4 fixable with the `--fix` option (2 of them by another finding's fix)."]
    _, fixed = _run(capsys, "check", "--fix", ".")
    assert "Found 4 findings: 3 errors, 1 info (4 fixed, 0 remaining)." in fixed.splitlines()


def test_foreseeing_the_safe_and_the_unsafe_fixes_reads_the_file_whole_once(
        chdir_tmp, capsys, monkeypatch):
    """Both fix simulations of a check (engine/lint/foreseen.py) start from one whole-file
    lint of the file, and the lint of the code each fixes reads the module its fix parsed."""
    from cudalint.engine.lint import autofix, python

    whole: list[bool] = []  # one per whole-file lint: whether it was given the module

    def counted(*args, **kwargs):
        if kwargs.get("sparse") is False:
            whole.append(kwargs.get("parsed") is not None)
        return lint_python(*args, **kwargs)

    lint_python = python.lint_python
    monkeypatch.setattr(python, "lint_python", counted)
    monkeypatch.setattr(autofix, "lint_python", counted)
    (chdir_tmp / "train.py").write_text(
        "import torch\nx = y.cuda(device=rank)\ntorch.cuda.synchronize()\n")
    _, out = _run(capsys, "check", "--no-cache", "--output-format", "concise", ".")
    assert "(2 of them by another finding's fix)" in out  # the safe fixes' simulation
    assert sorted(whole) == [False, True, True]  # the file once, each fixed code once


def test_hidden_fix_count_names_the_findings_another_unsafe_fix_removes(chdir_tmp, capsys):
    (chdir_tmp / "train.py").write_text(
        "import torch\nx = torch.cuda.DoubleTensor(3)\nn = torch.cuda.device_count()\n")
    hidden = ("(3 more fixable with the `--unsafe-fixes` option, 1 of them by another "
              "finding's fix.)")  # CUD109 goes with CUD104's unsafe fix
    _, out = _run(capsys, "check", ".")
    assert out.splitlines()[-2:] == ["Found 3 findings: 2 errors, 1 warning.", hidden]
    _, fixing = _run(capsys, "check", "--fix", ".")
    assert fixing.splitlines()[-2:] == [
        "Found 3 findings: 2 errors, 1 warning (0 fixed, 3 remaining).", hidden]
    _, fixed = _run(capsys, "check", "--unsafe-fixes", ".")
    assert "(3 fixed, 1 remaining)" in fixed  # the float64 left: MPS has none


def test_single_severity_footer_and_diff_count(chdir_tmp, capsys):
    (chdir_tmp / "train.py").write_text("model = Net().cuda()\nx = y.cuda()\n")
    _, out = _run(capsys, "check", ".")
    assert _footer(out) == "Found 2 errors."
    _, diff = _run(capsys, "check", "--diff", ".")
    assert "Would fix 2 errors." in diff.splitlines()


def _formats(capsys, *paths: str) -> dict[str, str]:
    return {fmt: _run(capsys, "check", "--output-format", fmt, *paths)[1]
            for fmt in ("concise", "json", "github", "gitlab", "junit", "sarif")}


def test_every_format_gives_the_same_severity_and_says_guarded(chdir_tmp, capsys):
    (chdir_tmp / "train.py").write_text(GUARDED)
    out = _formats(capsys, "train.py")
    found = json.loads(out["json"])
    assert [(f["code"], f["severity"], f["guarded"]) for f in found] == [
        ("CUD105", "warning", True), ("CUD102", "error", False)]
    concise = out["concise"].splitlines()
    assert concise[0].endswith("(guarded)") and not concise[1].endswith("(guarded)")
    github = out["github"].splitlines()
    assert github[0].startswith("::warning ") and github[0].endswith("(guarded)")
    assert github[1].startswith("::error ") and "guarded" not in github[1]
    gitlab = json.loads(out["gitlab"])
    assert [(i["severity"], i["description"].endswith("(guarded)")) for i in gitlab] == [
        ("major", True), ("critical", False)]
    sarif = json.loads(out["sarif"])["runs"][0]["results"]
    assert [(r["level"], r["message"]["text"].endswith("(guarded)")) for r in sarif] == [
        ("warning", True), ("error", False)]
    failures = ET.fromstring(out["junit"]).iter("failure")
    assert [(f.get("type"), f.get("message", "").endswith("(guarded)")) for f in failures] \
        == [("warning", True), ("error", False)]


def test_rule_docs_and_sarif_give_a_code_the_same_severities(capsys):
    _, listed = _run(capsys, "rule", "--all", "--output-format", "json")
    rules = json.loads(listed)
    assert len(rules) == len({r["code"] for r in rules}) > 30
    by_code = {r["code"]: r for r in rules}
    cud105 = by_code["CUD105"]
    assert (cud105["severity"], cud105["severities"]) == ("error", ["error", "warning", "info"])
    assert by_code["CUD102"]["severities"] == ["error"]
    _, text = _run(capsys, "rule", "--all")
    row = next(line.split("\t") for line in text.splitlines() if line.startswith("CUD105\t"))
    assert row[2] == "error (warning or info at some sites)"
    docs = Path(__file__).resolve().parents[2] / "docs" / "rules"
    for rule in rules:
        page = (docs / f"{rule['code']}.md").read_text(encoding="utf-8")
        shown = re.search(r"^Severity: (.+?)\. Fix:", page, re.M).group(1)
        assert shown.split(" ")[0] == rule["severity"]
        assert all(severity in shown for severity in rule["severities"])
        primary = rule_by_code(rule["code"])
        assert primary is not None and str(primary.severity) == rule["severity"]


def test_findings_take_only_the_severities_their_rule_documents(demo, capsys, monkeypatch):
    monkeypatch.chdir(demo)
    _, listed = _run(capsys, "check", "--output-format", "json", ".")
    _, rules = _run(capsys, "rule", "--all", "--output-format", "json")
    documented = {r["code"]: r["severities"] for r in json.loads(rules)}
    lower = {"error": "warning", "warning": "info", "info": "info"}
    for finding in json.loads(listed):
        allowed = documented[finding["code"]]
        if finding["guarded"]:
            allowed = [lower[s] for s in allowed]
        assert finding["severity"] in allowed, finding

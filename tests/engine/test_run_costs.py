"""What a run's own process pays for besides the checks: the tree scan before the workers
start, and the reports the workers send back."""

from __future__ import annotations

import re

import pytest

from cudalint import rules as registry
from cudalint.config import load_config
from cudalint.engine.project import facts as project
from cudalint.engine.running import runner
from cudalint.engine.running.runner import RunOptions, check_file
from cudalint.kinds import FileKind
from cudalint.rules import all_rules

# The pattern the tree scan used before it looked for the `def` first: the reference.
_REFERENCE = re.compile(rb"(?m)^[ \t]+def[ \t]+cuda[ \t]*\(")


@pytest.mark.parametrize("text", [
    b"class Pool:\n    def cuda(self):\n        return self\n",
    b"class Pool:\n\tdef  cuda (self):\n\t\treturn self\n",
    b"class Pool:\r\n    def cuda(self):\r\n        pass\r\n",
    b"class Pool:\r    def cuda(self):\r        pass\r",  # lone CR: no line starts for `^`
    b"def cuda(x):\n    return x\n",  # a module-level function is no method
    b"x = '  def cuda(self):'\n",
    b"    # def cuda(self):\n",
    b"class A:\n    def cudax(self):\n        pass\n    def cuda_(self):\n        pass\n",
    b"def f():\n    x = 1;  def_ = 2\n    def g():\n        pass\n",
    b"class A:\n    async def cuda(self):\n        pass\n",
    b"    def cuda(",
    b"",
])
def test_the_cuda_method_scan_agrees_with_the_line_pattern(text):
    assert project.file_facts(text)[:2] == (False, _REFERENCE.search(text) is not None)


def test_a_file_without_findings_sends_no_text_back(tmp_path):
    clean = tmp_path / "clean.py"
    clean.write_text("import torch\n\ndef f(x):\n    return x.to(torch.float32)\n")
    found = tmp_path / "found.py"
    found.write_text("import torch\n\nx = torch.ones(2).cuda()\n")
    rules = tuple(all_rules())
    settings = project.settings_for(_config(tmp_path))
    for path, expected in ((clean, None), (found, found.read_text())):
        report = check_file(path, FileKind.PYTHON, rules, settings, RunOptions())
        assert bool(report.findings) == (expected is not None)
        assert report.text == expected


def _config(root):
    return load_config(root)


def test_full_output_still_quotes_the_lines_of_findings(tmp_path, capsys):
    from cudalint.cli import main

    (tmp_path / "train.py").write_text("import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    (tmp_path / "clean.py").write_text("x = 1\n")
    main(["check", "--no-cache", "--output-format", "full", "--jobs", "2", str(tmp_path)])
    out = capsys.readouterr().out
    assert "model = torch.nn.Linear(2, 2).cuda()" in out


def test_reports_of_the_pool_are_those_of_one_process(tmp_path):
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(
            "import torch\n\n" + ("y = torch.ones(1).cuda()\n" if i % 2 else "y = 1\n"))
    config = _config(tmp_path)
    reports = [runner.run([tmp_path], config, RunOptions(jobs=jobs), registry=registry)
               for jobs in (1, 2)]
    assert [(r.path, r.findings, r.text) for r in reports[0]] \
        == [(r.path, r.findings, r.text) for r in reports[1]]
    assert [r.text is None for r in reports[0]] == [not r.findings for r in reports[0]]

"""`--diff` and `--fix-only` show no findings, so a file they could not check (a syntax error,
a file not UTF-8) is an error line on stderr and exit 2 (README, "Exit codes"); `check` and
`--fix` report it as the file's own finding, exit 1. The old `--diff` said "No fixes
available." and exited 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalint.cli import main

BROKEN = {
    "syntax.py": b"import torch\nx = torch.zeros(1).cuda(\n",
    "latin1.py": b"import torch\n# caf\xe9\nx = torch.zeros(1).cuda()\n",
}


@pytest.mark.parametrize("name", sorted(BROKEN))
@pytest.mark.parametrize(("mode", "code"), [([], 1), (["--fix"], 1), (["--diff"], 2),
                                            (["--fix-only"], 2)])
def test_a_file_that_could_not_be_checked(tmp_path: Path, capsys, name, mode, code):
    bad = tmp_path / name
    bad.write_bytes(BROKEN[name])
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    assert main(["check", "--no-cache", *mode, str(tmp_path)]) == code
    out, err = capsys.readouterr()
    assert f"{name}:" in (err if mode in (["--diff"], ["--fix-only"]) else out)
    assert bad.read_bytes() == BROKEN[name]


def test_diff_still_exits_1_with_fixes_and_0_without(tmp_path: Path, capsys):
    (tmp_path / "clean.py").write_text("x = 1\n")
    assert main(["check", "--no-cache", "--diff", str(tmp_path)]) == 0
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    assert main(["check", "--no-cache", "--diff", str(tmp_path)]) == 1
    assert main(["check", "--no-cache", "--fix-only", str(tmp_path)]) == 0
    capsys.readouterr()

"""`cudalint check - --stdin-filename PATH`: an editor plugin's buffer, through the real command."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.commands.stdin import NAMELESS_NOTE
from cudalint.runtime.helper import inline_block

BUFFER = (
    "import torch\n"
    "\n"
    "model = Net().cuda()\n"
    'print("moving the model with .cuda() to cuda:0")\n'
    "if torch.cuda.is_available():\n"
    "    torch.cuda.synchronize()\n"
)
# stdin writes one file: the fix carries the device helper inline, never an import of a helper
# that is not there (nor of cudalint, unless `helper = "cudalint.device"` asks for it)
FIXED = (
    "import torch\n"
    "\n"
    + inline_block(["pick_device", "synchronize"]) +
    "\n"
    "model = Net().to(pick_device())\n"
    'print("moving the model with .cuda() to cuda:0")\n'
    "if torch.cuda.is_available():\n"
    "    synchronize()\n"
)


class Done:
    def __init__(self, returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def cudalint(monkeypatch, capsysbinary):
    """`cudalint ARGS < stdin` in folder `cwd`, in-process: (exit code, stdout, stderr)."""

    def run(cwd: Path, *args: str, stdin: bytes) -> Done:
        monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        code = main(list(args))
        out, err = capsysbinary.readouterr()
        return Done(code, out, err)

    return run


def test_fix_through_the_installed_command(tmp_path):
    done = subprocess.run([sys.executable, "-m", "cudalint", "check", "--fix",
                           "--stdin-filename", "train.py", "-"], input=BUFFER.encode(),
                          cwd=tmp_path, capture_output=True, timeout=120, check=False)
    assert (done.returncode, done.stdout.decode()) == (0, FIXED)
    assert "Found 3 findings: 1 error, 2 warnings (3 fixed, 0 remaining)." in \
        done.stderr.decode()
    assert list(tmp_path.iterdir()) == []  # nothing is written to the named file


def test_buffer_without_a_name_is_python(tmp_path, cudalint):
    done = cudalint(tmp_path, "check", "--output-format", "concise", "-", stdin=BUFFER.encode())
    assert done.returncode == 1
    lines = done.stdout.decode().splitlines()
    assert lines[0] == "-:3:15: CUD102 [*] `.cuda()` only works on an NVIDIA GPU"
    assert not any(":4:" in line for line in lines)  # the print() prose is not a finding
    # its project is unknown: said once, and nothing else
    assert done.stderr.decode() == NAMELESS_NOTE


def test_fix_writes_the_fixed_buffer_to_stdout_and_findings_to_stderr(tmp_path, cudalint):
    done = cudalint(tmp_path, "check", "--fix", "--stdin-filename", "pkg/train.py", "-",
                    stdin=BUFFER.encode())
    assert done.returncode == 0
    assert done.stdout.decode() == FIXED
    assert "(3 fixed, 0 remaining)" in done.stderr.decode()
    assert not (tmp_path / "pkg").exists()  # nothing is written to the named file


def test_fix_keeps_bytes_and_echoes_what_it_cannot_fix(tmp_path, cudalint):
    crlf = "\ufeffx = torch.load(path)\r\nm = Net().cuda()\r\n".encode()
    done = cudalint(tmp_path, "check", "--fix", "--stdin-filename", "a.py", "-", stdin=crlf)
    assert done.stdout.startswith("\ufeff".encode())  # the BOM and the line endings stay
    assert done.stdout.endswith(b"\r\nx = torch.load(path)\r\nm = Net().to(pick_device())\r\n")
    assert done.returncode == 1  # CUD111's fix is unsafe: one finding remains
    assert "CUD111" in done.stderr.decode()
    broken = b"def f(:\n    return x.cuda()\n"
    done = cudalint(tmp_path, "check", "--fix", "-", stdin=broken)
    assert done.stdout == broken and done.returncode == 1
    assert "SyntaxError" in done.stderr.decode()


def test_name_picks_configuration_and_per_file_ignores(tmp_path, cudalint):
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[tool.cudalint]\nper-file-ignores = { "tests/*" = ["CUD102"] }\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    args = ("check", "--output-format", "json", "--stdin-filename")
    in_tests = cudalint(elsewhere, *args, str(project / "tests" / "t.py"), "-",
                        stdin=BUFFER.encode())
    in_src = cudalint(elsewhere, *args, str(project / "train.py"), "-", stdin=BUFFER.encode())
    assert {f["code"] for f in json.loads(in_tests.stdout)} == {"CUD105", "CUD109"}
    assert {f["code"] for f in json.loads(in_src.stdout)} == {"CUD102", "CUD105", "CUD109"}
    assert json.loads(in_src.stdout)[0]["filename"] == str(project / "train.py")


def _notebook(source: str) -> str:
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": source.splitlines(keepends=True)}
    document = {"cells": [cell], "metadata": {"kernelspec": {"language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1) + "\n"


def test_notebook_buffer_is_read_and_fixed_as_a_notebook(tmp_path, cudalint):
    notebook = _notebook("!nvidia-smi\nmodel = Net().cuda()\n")
    done = cudalint(tmp_path, "check", "--output-format", "json", "--stdin-filename",
                    "explore.ipynb", "-", stdin=notebook.encode())
    found = json.loads(done.stdout)
    assert [(f["cell"], f["location"]["row"], f["code"]) for f in found] == [
        (1, 1, "CUD501"), (1, 2, "CUD102")]
    fixed = cudalint(tmp_path, "check", "--fix", "--stdin-filename", "explore.ipynb", "-",
                     stdin=notebook.encode())
    sources = ["".join(cell["source"]) for cell in json.loads(fixed.stdout)["cells"]]
    [cell] = sources  # the helper tops the cell that needs it, after its magic
    assert cell.startswith("!nvidia-smi\n# -- cudalint device helper")
    assert cell.endswith("\nmodel = Net().to(pick_device())\n")
    assert "def pick_device(device=None):  # cudalint device helper" in cell
    assert not any("import pick_device" in source for source in sources)


def test_fix_imports_cudalint_only_where_the_configuration_asks(tmp_path, cudalint):
    (tmp_path / "pyproject.toml").write_text('[tool.cudalint]\nhelper = "cudalint.device"\n')
    done = cudalint(tmp_path, "check", "--fix", "--stdin-filename", "train.py", "-",
                    stdin=BUFFER.encode())
    assert done.stdout.decode().startswith(
        "import torch\nfrom cudalint.device import pick_device, synchronize\n")


def test_fix_imports_the_helper_a_check_wrote_where_it_defines_what_the_fixes_need(tmp_path,
                                                                                cudalint):
    """RULES.md: stdin gives what `cudalint check --fix` gives. After a `check --fix` wrote
    `pkg/_device.py` for one module, the buffer of another module is fixed alike, byte for
    byte; a buffer needing a function that helper lacks carries its functions inline (only
    `check --fix` may extend the helper's file)."""
    project = tmp_path / "thèse" / "lab"
    (project / "pkg").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "lab"\n')
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "model.py").write_text("import torch\n\nnet = Net().cuda()\n")
    assert cudalint(project, "check", "--fix", "--no-cache", ".", stdin=b"").returncode == 0
    helper = (project / "pkg" / "_device.py").read_text()
    other = "import torch\n\n\ndef place(x):\n    return x.cuda()\n"
    done = cudalint(project, "check", "--fix", "--stdin-filename", "pkg/other.py", "-",
                    stdin=other.encode())
    (project / "pkg" / "other.py").write_text(other)
    assert cudalint(project, "check", "--fix", "--no-cache", "pkg/other.py",
                    stdin=b"").returncode == 0
    assert done.stdout.decode() == (project / "pkg" / "other.py").read_text()
    assert "from pkg._device import pick_device\n" in done.stdout.decode()
    assert (project / "pkg" / "_device.py").read_text() == helper  # it had what was needed

    done = cudalint(project, "check", "--fix", "--stdin-filename", "pkg/bench.py", "-",
                    stdin=b"import torch\n\ntorch.cuda.synchronize()\n")
    fixed = done.stdout.decode()
    assert inline_block(["synchronize"]) in fixed and "_device import" not in fixed
    compile(fixed, "pkg/bench.py", "exec")


@pytest.mark.parametrize(
    ("name", "text", "code"),
    [
        ("requirements.txt", "numpy\ntorch==2.3.1+cu121\n", "CUD402"),
        ("Dockerfile", "FROM nvidia/cuda:12.1.0-runtime-ubuntu22.04\n", "CUD403"),
        ("scripts/train.slurm", "#!/bin/bash\n#SBATCH --gres=gpu:1\necho 'use a gpu'\n",
         "CUD503"),
        ("bin/run", "#!/bin/sh\nnvidia-smi\necho nvidia-smi\n", "CUD501"),
    ],
)
def test_other_kinds_by_name(tmp_path, cudalint, name, text, code):
    done = cudalint(tmp_path, "check", "--output-format", "json", "--stdin-filename", name, "-",
                    stdin=text.encode())
    assert [f["code"] for f in json.loads(done.stdout)] == [code]
    fixed = cudalint(tmp_path, "check", "--fix", "--stdin-filename", name, "-",
                     stdin=text.encode())
    assert fixed.stdout == text.encode()  # no fix for these: the buffer comes back as it was


def test_force_exclude_skips_an_excluded_name_and_echoes_it(tmp_path, cudalint):
    (tmp_path / ".git").mkdir()  # the project root, whose `dist/` the default excludes skip
    name = str(tmp_path / "dist" / "gen.py")
    args = ("check", "--force-exclude", "--stdin-filename", name)
    done = cudalint(tmp_path / ".git", *args, "-", stdin=BUFFER.encode())
    assert done.returncode == 0 and b"All checks passed!" in done.stdout
    fixed = cudalint(tmp_path, *args, "--fix", "-", stdin=BUFFER.encode())
    assert fixed.returncode == 0 and fixed.stdout == BUFFER.encode()
    unforced = cudalint(tmp_path, "check", "--stdin-filename", name, "-",
                        stdin=BUFFER.encode())
    assert unforced.returncode == 1


def test_stdin_with_other_paths_is_a_usage_error(tmp_path, cudalint):
    done = cudalint(tmp_path, "check", "--stdin-filename", "a.py", "b.py", stdin=b"")
    assert done.returncode == 2
    assert done.stderr.decode().count("\n") == 1 and b"Traceback" not in done.stderr

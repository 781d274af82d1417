"""Python programs run as `python ARGV` would run them, forked from a process that imported
torch once: a test that runs a fixed project's entry points (torch imported by each) pays
torch's import (2 to 3 CPU-seconds) once per pytest worker, not once per run.

Each run is a fork of the warm process, with its own working folder, environment, `sys.path`
(the script's folder or the working folder first, then PYTHONPATH's entries, as python puts
them), `sys.argv`, output files and exit status: a program sees what a fresh `python` shows it,
but for the modules already imported (torch and what it imports) and for a `sitecustomize` on
PYTHONPATH, which is run as python runs it at start-up. POSIX only (fork)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# The warm process: reads one JSON request a line, forks, answers with the exit status.
SERVER = r'''
import json, os, sys
import torch  # noqa: F401  (the point: imported once, before any fork)

def child(request):
    import atexit, runpy, traceback
    out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(out, 1)
    os.dup2(err, 2)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    argv = request["argv"]
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if argv[0] == "-c":
        first, sys.argv = "", ["-c", *argv[2:]]
    elif argv[0] == "-m":
        first, sys.argv = os.getcwd(), [argv[1], *argv[2:]]
    else:
        first, sys.argv = os.path.dirname(os.path.abspath(argv[0])), list(argv)
    sys.path[:] = [first, *extra, *request["site"]]
    code = 0
    try:
        for folder in extra:
            if os.path.isfile(os.path.join(folder, "sitecustomize.py")):
                runpy.run_path(os.path.join(folder, "sitecustomize.py"), run_name="sitecustomize")
                break
        if argv[0] == "-c":
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
        elif argv[0] == "-m":
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if not isinstance(exit_.code, int) and exit_.code is not None:
            print(exit_.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)

site = sys.path[1:]  # what python adds after the program's own folder (.pth files included)
print("ready", flush=True)
for line in sys.stdin:
    request = json.loads(line)
    request["site"] = site
    pid = os.fork()
    if pid == 0:
        child(request)
    _, status = os.waitpid(pid, 0)
    print(json.dumps(os.waitstatus_to_exitcode(status)), flush=True)
'''


class WarmPython:
    """One warm process; `run` is `subprocess.run([sys.executable, *argv], ...)` for it."""

    def __init__(self) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="warm-python-"))
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("PYTHONPATH", None)
        self._process = subprocess.Popen(
            [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, env=env, cwd=self._folder)
        assert self._read() == "ready"
        self._runs = 0

    def _read(self) -> str:
        assert self._process.stdout is not None
        return self._process.stdout.readline().strip()

    def run(self, argv: list[str], *, cwd: Path, env: dict[str, str]
            ) -> subprocess.CompletedProcess[str]:
        self._runs += 1
        stdout = self._folder / f"{self._runs}.out"
        stderr = self._folder / f"{self._runs}.err"
        request = {"argv": argv, "cwd": str(cwd), "env": env, "stdout": str(stdout),
                   "stderr": str(stderr)}
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        answer = self._read()
        assert answer, "the warm python died"
        done = subprocess.CompletedProcess([sys.executable, *argv], int(json.loads(answer)),
                                           stdout.read_text(encoding="utf-8", errors="replace"),
                                           stderr.read_text(encoding="utf-8", errors="replace"))
        stdout.unlink()
        stderr.unlink()
        return done

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=60)
        for left in self._folder.iterdir():
            left.unlink()
        self._folder.rmdir()

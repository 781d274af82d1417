"""Time `cudalint lsp` as an editor drives it over stdio, on a realistic training script.

    python benchmarks/bench_lsp.py [--lines 2000] [--edits 50] [--debounce-ms 50]
                                   [--launches 5]

It opens the script (benchmarks/training_file.py) as soon as `initialize` is answered (the
server answers before it loads its engine, lsp/opening.py: the first diagnostics count that
load), types a comment one keystroke at a time and
now and then adds a line with a `.cuda()` call (every state is valid Python), and times each edit
from its `didChange` to the `publishDiagnostics` of that version. As VS Code does, each change
is followed at once by a `textDocument/codeAction` request at the cursor (the diagnostics the
editor shows there sent with it; on an added line, the cursor is on its `.cuda()`), timed to
its answer, with the client capabilities VS Code announces (an action's edit is resolved when
the user picks it). Then it sends a burst of edits, closes the server's stdin and times how long
the server takes to go. Each figure is printed beside the issue's limit and as a ratio to a
bare LibCST parse of the same file, timed in the same run (which machine speed cancels out of).

Start-up included: `--launches N` times, N times over, from launching the server process to the
first `publishDiagnostics` of the file (`initialize`, `initialized`, then `didOpen` at once, as
an editor opening a file starts the server), and prints the median beside that of launching
`python -c "import libcst"` (an interpreter's start and the parser's import), timed in the
same run, each launch alternating with one of the other; with the server's CPU seconds by
then (Linux: /proc), and the time from those diagnostics to the answer of a code action asked
at once on the first of them (issue 46: 0.3 s at most). Every process the benchmark starts
runs with its modules' bytecode compiled, as an installed package has it (a first, untimed
launch of each writes it under a temporary PYTHONPYCACHEPREFIX, whatever
PYTHONDONTWRITEBYTECODE says: compiling cudalint's sources at each start would add a tenth
of a second that no installed server pays).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libcst as cst

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.training_file import training_file  # noqa: E402
from tests.lsp.client import Client  # noqa: E402

COMMENT = "# move the batch to the GPU before the forward pass, as x.cuda() did in the paper "
CODE_LINE = "extra_{k} = torch.zeros(8).cuda()\n"
WAIT = 900.0  # a bound for a hung server, far above any figure worth reporting
# What VS Code announces of its code actions, diagnostics and workspace edits.
CAPABILITIES = {
    "textDocument": {
        "codeAction": {
            "dynamicRegistration": True, "isPreferredSupport": True, "disabledSupport": True,
            "dataSupport": True, "honorsChangeAnnotations": True,
            "resolveSupport": {"properties": ["edit"]},
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                "", "quickfix", "refactor", "refactor.extract", "refactor.inline",
                "refactor.rewrite", "source", "source.organizeImports"]}},
        },
        "publishDiagnostics": {"relatedInformation": True, "versionSupport": False,
                               "codeDescriptionSupport": True, "dataSupport": True},
        "synchronization": {"dynamicRegistration": True, "willSave": True,
                            "willSaveWaitUntil": True, "didSave": True},
    },
    "workspace": {"workspaceEdit": {"documentChanges": True}, "applyEdit": True},
}


class Editor:
    """One open document, edited as a person types: incremental changes, one per keystroke."""

    def __init__(self, client: Client, path: Path, text: str) -> None:
        self.client, self.uri, self.version = client, path.as_uri(), 1
        lines = text.split("\n")
        middle = len(lines) // 2
        # The comment goes in the middle; code lines go at a top-level blank line below it.
        self.comment_line = middle
        self.code_line = next(i for i in range(middle + 2, len(lines) - 1)
                              if lines[i] == "" and lines[i + 1].startswith(("def ", "class ")))
        self.column = 0
        self.added = 0
        self.cursor = {"line": 0, "character": 0}
        self.shown: list[dict[str, Any]] = []  # the diagnostics the editor shows
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": self.uri, "languageId": "python", "version": 1, "text": text}})

    def keystroke(self, index: int) -> None:
        if index == 0:
            self._insert(self.comment_line, 0, "#\n")
            self.column = 1
            self.code_line += 1
            self.cursor = {"line": self.comment_line, "character": 1}
        elif index % 10 == 9:
            line = CODE_LINE.format(k=self.added)
            self._insert(self.code_line, 0, line)
            self.cursor = {"line": self.code_line, "character": line.index("cuda")}
            self.added += 1
        else:
            char = COMMENT[1 + (self.column - 1) % (len(COMMENT) - 1)]
            self._insert(self.comment_line, self.column, char)
            self.column += 1
            self.cursor = {"line": self.comment_line, "character": self.column}

    def ask_actions(self) -> int:
        """A code action request at the cursor, as an editor sends one after a change."""
        where = {"start": self.cursor, "end": self.cursor}
        under = [d for d in self.shown if _touches(d["range"], self.cursor)]
        return self.client.ask("textDocument/codeAction", {
            "textDocument": {"uri": self.uri}, "range": where,
            "context": {"diagnostics": under, "triggerKind": 2}})

    def _insert(self, line: int, column: int, text: str) -> None:
        self.version += 1
        where = {"line": line, "character": column}
        self.client.notify("textDocument/didChange", {
            "textDocument": {"uri": self.uri, "version": self.version},
            "contentChanges": [{"range": {"start": where, "end": where}, "text": text}]})

    def diagnostics(self) -> list[dict[str, Any]]:
        self.shown = self.client.diagnostics(self.uri, self.version, timeout=WAIT)
        return self.shown


def _touches(where: dict[str, Any], cursor: dict[str, int]) -> bool:
    def key(position: dict[str, int]) -> tuple[int, int]:
        return position["line"], position["character"]
    return key(where["start"]) <= key(cursor) <= key(where["end"])


def parse_time(text: str, repeat: int = 3) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        cst.parse_module(text)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def percentile(values: list[float], percent: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(percent / 100 * (len(ordered) - 1)))]


def run(folder: Path, text: str, edits: int, debounce_ms: int) -> dict[str, float]:
    path = folder / "train.py"
    path.write_text(text, encoding="utf-8")
    with (folder / "server.log").open("wb") as log:
        client = Client(folder, log, ["--debounce-ms", str(debounce_ms)])
        try:
            client.initialize(folder, CAPABILITIES)
            start = time.perf_counter()
            editor = Editor(client, path, text)
            editor.diagnostics()
            figures = {"first": time.perf_counter() - start}
            latencies, answers, fixes = [], [], 0
            for index in range(edits):
                start = time.perf_counter()
                editor.keystroke(index)
                asked = editor.ask_actions()
                asked_at = time.perf_counter()
                editor.diagnostics()
                latencies.append(time.perf_counter() - start)
                found = client.response(asked, "textDocument/codeAction", timeout=WAIT)
                answers.append(time.perf_counter() - asked_at)
                fixes += any(a["title"].startswith("Fix CUD") for a in found)
            figures["p50"] = percentile(latencies, 50)
            figures["p95"] = percentile(latencies, 95)
            figures["actions p50"] = percentile(answers, 50)
            figures["actions p95"] = percentile(answers, 95)
            figures["quick fixes"] = fixes
            figures["exit"] = _exit_time(client, editor)
            return figures
        finally:
            client.kill()


class Launch:
    """One launch: seconds to the first diagnostics, the server's CPU seconds by then (None
    where /proc cannot tell), and seconds from them to a code action's answer."""

    def __init__(self, first: float, cpu: float | None, action: float) -> None:
        self.first, self.cpu, self.action = first, cpu, action


def launch_to_first(folder: Path, text: str, launches: int) -> tuple[list[Launch], list[float]]:
    """Each launch of the server (`Launch`), and the seconds to run
    `python -c "import libcst"`, per launch: the two alternate (after an untimed
    `python -c "import libcst"`), so that a machine's load weighs on both alike."""
    _run_python("import libcst")
    started, interpreter = [], []
    for index in range(launches):
        started.append(_launch(folder / f"launch{index}", text))
        interpreter.append(_run_python("import libcst"))
    return started, interpreter


def _launch(here: Path, text: str) -> Launch:
    here.mkdir()
    path = here / "train.py"
    path.write_text(text, encoding="utf-8")
    with (here / "server.log").open("wb") as log:
        start = time.perf_counter()
        client = Client(here, log)
        try:
            client.initialize(here, CAPABILITIES)
            uri = path.as_uri()
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python", "version": 1, "text": text}})
            shown = client.diagnostics(uri, 1, timeout=WAIT)
            first = time.perf_counter() - start
            cpu = _cpu_seconds(client.process.pid)
            cursor = shown[0]["range"]["start"] if shown else {"line": 0, "character": 0}
            asked = client.ask("textDocument/codeAction", {
                "textDocument": {"uri": uri}, "range": {"start": cursor, "end": cursor},
                "context": {"diagnostics": shown[:1], "triggerKind": 2}})
            client.response(asked, "textDocument/codeAction", timeout=WAIT)
            return Launch(first, cpu, time.perf_counter() - start - first)
        finally:
            client.kill()


def _cpu_seconds(pid: int) -> float | None:
    """The user and system CPU seconds process `pid` has used so far (Linux's /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _run_python(code: str) -> float:
    """Seconds to run `python -c CODE`."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


@contextlib.contextmanager
def compiled_bytecode(folder: Path) -> Iterator[None]:
    """Processes started meanwhile keep their modules' bytecode under `folder`."""
    saved = {name: os.environ.get(name)
             for name in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    os.environ["PYTHONPYCACHEPREFIX"] = str(folder)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _exit_time(client: Client, editor: Editor) -> float:
    """Seconds from closing stdin, just after a burst of edits, to the process's end."""
    for index in range(5):
        editor.keystroke(index + 1)
    start = time.perf_counter()
    client.close_input()
    try:
        client.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        return float("inf")
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--debounce-ms", type=int, default=50)
    parser.add_argument("--launches", type=int, default=5, metavar="N",
                        help="time launch-to-first-diagnostics over N launches (0: skip)")
    args = parser.parse_args()
    text = training_file(args.lines)
    reference = parse_time(text)
    with tempfile.TemporaryDirectory(prefix="bench_lsp_") as folder, \
            compiled_bytecode(Path(folder) / "bytecode"):
        print(f"load average {os.getloadavg()[0]:.1f} at the start")
        _launch(Path(folder) / "compiling", text)  # untimed: writes the bytecode
        figures = run(Path(folder), text, args.edits, args.debounce_ms)
        if args.launches > 0:
            started, interpreter = launch_to_first(Path(folder), text, args.launches)
    print(f"file: {text.count(chr(10))} lines; {args.edits} edits; debounce {args.debounce_ms} ms;"
          f" {figures['quick fixes']:.0f} code action answers held a finding's fix")
    print(f"reference: LibCST parse of the file {reference * 1000:.0f} ms (median of 3)\n")
    rows = [
        ("first diagnostics after didOpen", figures["first"], 1.0),
        ("diagnostics per edit, p50", figures["p50"], 0.060),
        ("diagnostics per edit, p95", figures["p95"], 0.150),
        ("code actions per edit, p50", figures["actions p50"], None),
        ("code actions per edit, p95", figures["actions p95"], None),
        ("exit after stdin closes", figures["exit"], 2.0),
    ]
    print(f"{'figure':<34} {'ms':>9} {'limit ms':>9} {'met':>4} {'/ parse':>8}")
    for name, seconds, limit in rows:
        met = "" if limit is None else ("yes" if seconds <= limit else "NO")
        shown_limit = "" if limit is None else f"{limit * 1000:.0f}"
        print(f"{name:<34} {seconds * 1000:>9.0f} {shown_limit:>9} {met:>4} "
              f"{seconds / reference:>7.2f}x")
    if args.launches > 0:
        _print_launches(started, interpreter)
    print(f"load average {os.getloadavg()[0]:.1f} (other processes skew every figure)")
    return 0


def _print_launches(started: list[Launch], interpreter: list[float]) -> None:
    first = statistics.median(launch.first for launch in started)
    libcst_start = statistics.median(interpreter)
    met = "yes" if first <= 0.8 else "NO"
    print(f"\nstart-up included, median of {len(started)} launches "
          f"(each: {', '.join(f'{launch.first * 1000:.0f}' for launch in started)} ms):")
    print(f"{'launch to first diagnostics':<34} {first * 1000:>9.0f} {800:>9} {met:>4} "
          f"{first / libcst_start:>7.2f}x python -c 'import libcst' "
          f"({libcst_start * 1000:.0f} ms)")
    cpus = [launch.cpu for launch in started if launch.cpu is not None]
    if cpus:
        print(f"{'  its CPU seconds (the server)':<34} {statistics.median(cpus) * 1000:>9.0f}")
    action = statistics.median(launch.action for launch in started)
    met = "yes" if action <= 0.3 else "NO"
    print(f"{'then a code action':<34} {action * 1000:>9.0f} {300:>9} {met:>4} "
          f"(each: {', '.join(f'{launch.action * 1000:.0f}' for launch in started)} ms)")


if __name__ == "__main__":
    raise SystemExit(main())

"""Generated programs with CUDA code spliced in, and the properties every run must keep: the
engine never crashes, every fix parses, fixing is idempotent, and a file without findings is
left byte for byte, and reading only the relevant functions (cudalint.engine.first_pass.sparse)
finds what reading the whole file finds. Shared by the test (a bounded, derandomized run) and
scripts/fuzz.py."""

from __future__ import annotations

import ast
from pathlib import Path

import hypothesmith
from hypothesis import strategies as st

from cudalint.config import Config
from cudalint.engine.contract import PythonRule
from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.lint.python import lint_python
from cudalint.engine.project import facts as project
from cudalint.engine.running.runner import RunOptions, check_file
from cudalint.kinds import FileKind
from cudalint.rules import all_rules

CUDA_LINES = (
    "import torch\n",
    "model = model.cuda()\n",
    "x = torch.zeros(3, device='cuda')\n",
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n",
    "torch.cuda.synchronize()\n",
    "with torch.cuda.amp.autocast():\n    y = net(x.cuda(non_blocking=True))\n",
    "torch.backends.cudnn.benchmark = True\n",
    "t = x.to('cuda:0').double()\n",
    "def train_step(model, x):\n    x = x.cuda()\n    return model(x)\n",
    "class Net:\n    def to_gpu(self):\n        return self.cuda()\n",
)


# Elements of a module-level table (cudalint.engine.first_pass.runs hides runs of those naming
# nothing).
TABLE_ELEMENTS = (
    "make({i})", "make(\n        {i},\n    )", "(make(\n        {i},\n    ))", "{i}.5",
    "[{i}, 2]", "'cuda:{i}'", "torch.device('cuda')", "x.cuda()", "DEVICE",
    "# entry {i}\n    make({i})", "make(n := {i})", "make(\n        {i}, {{'k': 1}})",
)
TABLE_KEYS = ("fn{i}", "'k{i}'", "torch.op{i}", "(a, {i})", "'device'")
OPENINGS = {"list": ("[", "]"), "tuple": ("(", ")"), "set": ("{{", "}}"), "dict": ("{{", "}}")}


@st.composite
def tables(draw: st.DrawFn) -> str:
    """A module-level table of 9 to 20 entries drawn from the elements above."""
    kind = draw(st.sampled_from(sorted(OPENINGS)))
    opening, closing = OPENINGS[kind]
    entries = []
    for i in range(draw(st.integers(9, 20))):
        value = draw(st.sampled_from(TABLE_ELEMENTS))
        if kind == "dict":
            value = f"{draw(st.sampled_from(TABLE_KEYS))}: {value}"
        entries.append("    " + value.replace("{i}", str(i)).replace("{{", "{")
                       .replace("}}", "}"))
    last = draw(st.sampled_from([",\n", "\n"]))
    body = ",\n".join(entries) + last
    return f"TABLE = {opening.format()}\n{body}{closing.format()}\n"


@st.composite
def programs(draw: st.DrawFn) -> str:
    """A generated module with CUDA lines and tables spliced between its top-level
    statements."""
    generated = draw(hypothesmith.from_grammar())
    lines = generated.splitlines(keepends=True)
    cuts = [0, *(i for i, line in enumerate(lines, 1) if line[:1] not in " \t#"), len(lines)]
    for line in draw(st.lists(st.one_of(st.sampled_from(CUDA_LINES), tables()), max_size=4)):
        at = draw(st.sampled_from(cuts))
        lines.insert(at, line if not lines[at - 1 : at] or lines[at - 1].endswith("\n")
                     else "\n" + line)
    return "".join(lines)


def check_properties(folder: Path, source: str) -> None:
    """Run check, then --fix twice, on `source`; raise AssertionError where a property fails."""
    path = folder / "generated.py"
    path.write_text(source, encoding="utf-8")
    original = path.read_bytes()
    settings = project.settings_for(Config(root=folder, target_torch="2.6", helper="pkg.device"))
    rules = all_rules()
    checked = check_file(path, FileKind.PYTHON, rules, settings, RunOptions())
    python_rules = [r for r in rules if issubclass(r, PythonRule)]
    prefilter = Prefilter.for_rules(python_rules, settings)
    sparse, whole = (lint_python(original, path, python_rules, settings, prefilter=prefilter,
                                 want_edits=True, sparse=read_sparse)
                     for read_sparse in (True, False))
    assert sparse.findings == whole.findings, "reading only the relevant functions differs"
    fixed = check_file(path, FileKind.PYTHON, rules, settings,
                       RunOptions(fix=True, unsafe_fixes=True))
    after = path.read_bytes()
    if not checked.findings:
        assert after == original, "a file without findings was changed"
    if after != original:
        ast.parse(after)  # the fix parses
    assert not any("internal error" in f.message for f in checked.findings + fixed.findings)
    again = check_file(path, FileKind.PYTHON, rules, settings,
                       RunOptions(fix=True, unsafe_fixes=True))
    assert again.fixed == 0 and path.read_bytes() == after, "fixing is not idempotent"

"""Generated programs with CUDA code, odd line breaks and deep chains spliced in, and the
properties every run must keep: the engine never crashes, every fix parses, fixing is
idempotent, and a file without findings is left byte for byte, and reading only the relevant
functions (cudalint.engine.first_pass.sparse) finds what reading the whole file finds. Shared by
the test (a bounded, derandomized run) and scripts/fuzz.py."""

from __future__ import annotations

import ast
import functools
import re
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

# Classes whose methods name no term of the rules, only the aliases `sync`
# (`torch.cuda.synchronize`) and `tc` (`torch.cuda`): the first pass must read them
# (cudalint.engine.first_pass.outline), in every shape a method takes.
ALIASED_METHODS = (
    "class Runner:\n    def step(self, x):\n        sync()\n        return x\n\n"
    "    def log(self, message):\n        print(message)\n",
    "class Runner:\n    async def wait(self):\n        sync()\n\n"
    "    @functools.lru_cache\n    def where(self):\n        return tc.current_device()\n",
    "class Runner:\n    @property\n    def device(self):\n        return tc.current_device()\n\n"
    "    @staticmethod\n    def flush():\n        sync()\n",
    "class Runner:\n    class Inner:\n        def flush(self):\n            sync()\n\n"
    "    def size(self):\n        return 1\n",
    "class Runner:\n    def step(self):\n        def inner():\n            sync()\n"
    "        return inner\n",
)
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
    *(("from torch.cuda import synchronize as sync\nimport torch.cuda as tc\n\n\n" + body)
      for body in ALIASED_METHODS),
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


# Characters that str.splitlines ends a line at and CPython's tokenizer does not: in a comment,
# a string or a docstring, where a fix's import must not land (CPython's lines count).
ODD_BREAKS = ("\u2028", "\u2029", "\f", "\v", "\x85", "\x1c", "\x1d", "\x1e")
ODD_LINES = ("# note {c} more\n", "NOTE = 'a{c}b'  # {c}\n", '"""Doc{c}string."""\n')
# Chains that `ast` keeps flat and LibCST nests one level per link (cudalint.engine.reading
# .depth), naming a term of the rules so that every read reads them: below the depth limit,
# at it, and far past it (where LibCST's parser overflowed the stack).
DEEP_LINES = ("ok = torch.cuda.is_available() and {chain}\n", "DEVICE = 'cuda' {strings}\n",
              "devices = [torch.device('cuda') {fors}]\n")
DEEP_SIZES = (2, 60, 117, 118, 119, 121, 400, 8000)


@st.composite
def odd_lines(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(ODD_LINES)).format(c=draw(st.sampled_from(ODD_BREAKS)))


@st.composite
def deep_lines(draw: st.DrawFn) -> str:
    size = draw(st.sampled_from(DEEP_SIZES))
    return draw(st.sampled_from(DEEP_LINES)).format(
        chain=" and ".join(["a"] * size), strings=" ".join(["'a'"] * size),
        fors=" ".join(["for a in b"] * size))


def _lines(source: str) -> list[str]:
    """The lines of `source` as CPython's tokenizer ends them (at \\n, \\r\\n, \\r only)."""
    return [line for line in re.split(r"(?<=\n)|(?<=\r)(?!\n)", source) if line]


@functools.cache
def _generated() -> st.SearchStrategy[str]:
    """hypothesmith's strategy of Python modules, made once: making it builds an LALR parser of
    Python's grammar (lark), which made every draw cost seconds."""
    return hypothesmith.from_grammar()


@st.composite
def programs(draw: st.DrawFn, *, aliased_methods: bool = False) -> str:
    """A generated module with CUDA lines and tables spliced between its top-level
    statements; with `aliased_methods`, one of the classes of `ALIASED_METHODS` too, after
    the aliases' import, at the module's end."""
    generated = draw(_generated())
    lines = _lines(generated)
    cuts = [0, *(i for i, line in enumerate(lines, 1) if line[:1] not in " \t#"), len(lines)]
    spliced = st.one_of(st.sampled_from(CUDA_LINES), tables(), odd_lines(), deep_lines())
    valid = _compiles("".join(lines))
    for line in draw(st.lists(spliced, max_size=4)):
        at = draw(st.sampled_from(cuts))
        lines.insert(at, _after(lines[at - 1 : at], line))
        if valid and not _compiles("".join(lines)):  # a cut inside a statement: `try:A` then
            del lines[at]                              # `except:` on the next line
    if aliased_methods:  # at the end: a top-level place whatever was spliced before
        lines.append(_after(lines[-1:], "from torch.cuda import synchronize as sync\n"
                            "import torch.cuda as tc\n\n\n"
                            + draw(st.sampled_from(ALIASED_METHODS))))
    return "".join(lines)


def _compiles(source: str) -> bool:
    try:
        compile(source, "generated.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _after(before: list[str], text: str) -> str:
    """`text` to splice after the line `before` holds (none: the module's start)."""
    return text if not before or before[0].endswith("\n") else "\n" + text


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
    # Both reads above go through the first pass (a whole read still skips the functions it
    # finds irrelevant): a read without it, every statement visited, is the reference.
    bare = lint_python(original, path, python_rules, settings, prefilter=None, want_edits=True)
    assert sparse.findings == bare.findings, "the first pass lost or changed a finding"
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

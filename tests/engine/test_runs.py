"""Runs of a module-level table's elements that LibCST does not read
(cudalint.engine.first_pass.runs): the findings, their positions and their fixes are those of a
check that reads the whole file."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from cudalint.engine.contract import PythonRule
from cudalint.engine.first_pass.outline import hidden_parts
from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.first_pass.runs import MIN_LINES, Tables, blank_runs
from cudalint.engine.lint.python import PythonResult, lint_python
from cudalint.engine.locate.codegen_positions import positions_of
from cudalint.engine.walk.context import Settings
from cudalint.rules import all_rules

RULES = tuple(r for r in all_rules() if issubclass(r, PythonRule))
SETTINGS = Settings(target_torch=(2, 13))
PREFILTER = Prefilter.for_rules(RULES, SETTINGS)


def _entry(name: str, extra: str = "") -> str:
    return (f"    OpInfo(\n        '{name}',\n        dtypes=floating_types(),\n"
            f"        sample_inputs_func=sample_inputs_{name},{extra}\n"
            "        supports_out=False,\n    ),\n")


# A table of operator descriptions, as torch's tests keep them: most entries name nothing the
# rules look for; one compiles a CUDA kernel, one hard-codes a device.
OP_DB = (
    "import torch\nfrom torch.testing._internal.opinfo.core import OpInfo\n\n"
    "jit_fn = None\n\nop_db: list[OpInfo] = [\n"
    + "".join(_entry(f"op{i}") for i in range(6))
    + _entry("jiterator", "\n        op=torch.cuda.jiterator._create_jit_fn('code'),")
    + "".join(_entry(f"late{i}") for i in range(4))
    + _entry("placed", "\n        device='cuda:0',")
    + "".join(_entry(f"last{i}") for i in range(3))
    + "]\n\n\ndef run(x):\n    return x.cuda()\n"
)

# A generated table keyed by functions, as torch's annotated_fn_args.py is.
ANNOTATED = (
    "import torch\n\nannotated_args = {\n"
    + "".join(f"    torch.op{i}: [{{'name': 'self', 'simple_type': 'Tensor'}}],\n"
              for i in range(12))
    + "    torch.cuda.synchronize: [],\n"
    + "".join(f"    torch.late{i}: [{{'name': 'self'}}],\n" for i in range(12))
    + "}\n\ntorch.cuda.synchronize()\n"
)


def _check(source: str, *, sparse: bool) -> PythonResult:
    return lint_python(source.encode(), Path("tables.py"), RULES, SETTINGS, prefilter=PREFILTER,
                       want_edits=True, sparse=sparse)


def _same(source: str) -> str:
    """The code LibCST read; the findings, with their positions and fixes, are a whole read's."""
    sparse, whole = _check(source, sparse=True), _check(source, sparse=False)
    assert sparse.findings == whole.findings
    assert sparse.module is not None
    return sparse.module.code


def _runs(source: str) -> list[tuple[int, int]]:
    data = source.encode()
    within = PREFILTER.within(data)
    assert within is not None
    return [(run.first, run.last) for run in hidden_parts(data, ast.parse(data), within)[1]]


def test_a_table_is_read_only_where_its_entries_name_what_the_rules_look_for() -> None:
    code = _same(OP_DB)
    assert "'op3'" not in code and "'late2'" not in code and "'last1'" not in code
    assert "_create_jit_fn" in code and "'cuda:0'" in code
    assert "'op0'" in code  # a table keeps its first entry
    codes = sorted(f.code for f in _check(OP_DB, sparse=True).findings)
    assert codes == ["CUD101", "CUD102", "CUD303"]


def test_a_table_keyed_by_functions_is_read_only_around_what_the_rules_look_for() -> None:
    code = _same(ANNOTATED)
    assert "torch.op5" not in code and "torch.late7" not in code
    assert "torch.cuda.synchronize: []" in code
    assert len(code.splitlines()) == len(ANNOTATED.splitlines())


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_run_keeps_every_line_and_what_follows_it_in_place(newline: str) -> None:
    data = OP_DB.replace("\n", newline).encode()
    within = PREFILTER.within(data)
    assert within is not None
    runs = hidden_parts(data, ast.parse(data), within)[1]
    assert runs
    blanked = blank_runs(data, runs)
    lines, before = blanked.splitlines(keepends=True), data.splitlines(keepends=True)
    assert len(lines) == len(before)
    for run in runs:
        assert lines[run.first - 1].endswith(b'*b"""' + newline.encode())
        assert lines[run.last - 1][run.end_column:] == before[run.last - 1][run.end_column:]
    inside = {i for run in runs for i in range(run.first - 1, run.last)}
    assert all(lines[i] == before[i] for i in range(len(lines)) if i not in inside)
    assert isinstance(ast.parse(blanked).body[3], ast.AnnAssign)


def test_string_keys_numbers_and_nested_tables_are_never_hidden() -> None:
    """A string key may be a keyword argument (`DataLoader(ds, **LOADER)`); numbers and nested
    tables are what rules read inside a table a name holds (`np.array(TABLE)`)."""
    keyed = "LOADER = {\n" + "".join(f"    'k{i}': make({i}),\n" for i in range(12)) \
        + "    'device': 'cuda',\n}\n"
    numbers = "TABLE = [\n" + "".join(f"    {i}.5,\n" for i in range(12)) + "    'cuda',\n]\n"
    nested = "TABLE = [\n" + "".join(f"    [{i}, 2],\n" for i in range(12)) + "    'cuda',\n]\n"
    for table in (keyed, numbers, nested):
        source = "import torch\n\n" + table
        assert _runs(source) == []
        _same(source)


def test_no_run_starts_or_ends_inside_parentheses_nor_holds_a_binding() -> None:
    calls = "".join(f"    make(\n        {i},\n    ),\n" for i in range(10))
    wrapped = ("import torch\n\nTABLE = [\n    make(0),\n    (make(\n        1,\n    )),\n"
               + calls + "    torch.device('cuda'),\n]\n")
    assert all(first > 7 for first, _ in _runs(wrapped))
    _same(wrapped)
    walrus = ("import torch\n\nTABLE = [\n    make(0),\n"
              + calls.replace("make(\n        3,", "make(\n        (n := 3),")
              + "    torch.device('cuda'),\n]\nprint(n)\n")
    line = walrus.splitlines().index("        (n := 3),") + 1
    assert _runs(walrus) and not any(first <= line <= last for first, last in _runs(walrus))
    _same(walrus)


def test_short_tables_and_runs_are_read_whole() -> None:
    source = "import torch\n\nTABLE = [\n    make(0),\n" + "".join(
        f"    make({i}),\n" for i in range(MIN_LINES - 2)) + "    torch.device('cuda'),\n]\n"
    assert _runs(source) == []


def test_an_import_only_a_run_uses_is_not_removed_by_a_fix() -> None:
    """`torch.cuda.current_device()` becomes `current_device()`: `import torch` goes only when
    nothing else uses it, and the hidden run of the table does."""
    source = ("import torch\n\nannotated = {\n    len: [],\n"
              + "".join(f"    torch.op{i}: [{{'name': 'self'}}],\n" for i in range(12))
              + "    print: ['nccl'],\n}\n\n\ndef main():\n"
              "    return torch.cuda.current_device()\n")
    assert "torch.op3" not in _same(source)
    fixes = [f.fix for f in _check(source, sparse=True).findings if f.fix is not None]
    assert fixes and not any(e.content == "" and e.location.row == 1
                             for fix in fixes for e in fix.edits)


def test_a_run_naming_a_name_a_relevant_statement_binds_is_read() -> None:
    """`DEVICE = "cuda"` makes `DEVICE` worth following, in a table too."""
    source = OP_DB.replace("jit_fn = None", 'DEVICE = "cuda"').replace(
        "sample_inputs_func=sample_inputs_op3", "sample_inputs_func=DEVICE")
    assert "sample_inputs_func=DEVICE" in _same(source)


TABLES = (
    "import torch\n\nPLAIN = [\n    make(0), 'é', make(1),\n    make(\n        2,\n    ),\n]\n"
    "KEYED: dict = {\n    'k': make(0),\n" + "".join(f"    torch.op{i}: make({i}),\n"
                                              for i in range(12))
    + "    (a, 'é'): torch.device('cuda'),\n    **more,\n    (b): x.cuda(),\n}\n"
    "PAIRS = (\n    make(0),\n" + "".join(f"    make(\n        {i},\n    ),\n" for i in range(5))
    + "    ('cuda', make(1)),\n    'é', torch.zeros(1, device='cuda'),\n)\n"
    "ITEMS = {\n\tmake(0),\n\tmake(1).cuda(),\n}\n"
)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_an_entry_of_a_table_is_placed_as_the_whole_module_places_it(newline: str) -> None:
    """Every node of every entry, generated alone from where `ast` starts the entry (after a
    hidden run, and after non-ASCII text on its line), is where LibCST's PositionProvider
    puts it in the whole module; an entry in parentheses is not placed alone."""
    data = TABLES.replace("\n", newline).encode()
    tree = ast.parse(data)
    within = PREFILTER.within(data)
    assert within is not None
    units, runs = hidden_parts(data, tree, within)
    assert runs and not units
    module = cst.parse_module(blank_runs(data, runs))
    whole = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    tables = Tables(tree.body, runs, data.decode())
    placed = []
    for index, statement in enumerate(module.body):
        assignment = statement.body[0]  # type: ignore[attr-defined]
        table = getattr(assignment, "value", None)
        for entry in getattr(table, "elements", ()):
            where = tables.entry_start(index, (statement, assignment, table, entry))
            head = getattr(entry, "key", None) or getattr(entry, "value", None)
            if not isinstance(entry, (cst.Element, cst.DictElement)) \
                    or (getattr(head, "lpar", ()) and not isinstance(head, cst.Tuple)):
                assert where is None
                continue
            assert where is not None
            found = positions_of(entry, module, where[0], column=where[1])
            assert all(found[node] == whole[node] for node in found)
            placed.append(module.code_for_node(entry).strip(" \t\r\n,"))
    # after a run, after 'é' on its line, and in a table indented with tabs
    assert {"(a, 'é'): torch.device('cuda')", "('cuda', make(1))", "make(1)",
            "torch.zeros(1, device='cuda')", "make(1).cuda()"} <= set(placed)

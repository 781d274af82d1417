"""Hand-written mutation testing of cudalint's core modules, without a mutation framework.

Each mutation names a source file, an exact text in it (found exactly once, or the run stops
with an error: the source moved on and the mutation must be rewritten), its replacement, the
test files that should notice, and what it breaks. For each one: the file is copied aside,
mutated, the tests run (`python -m pytest -x -q -p no:cacheprovider <files>`, with a time
limit), and the file is restored, in a `finally` (Ctrl-C and SIGTERM included). A mutation the
tests fail on is killed; one they pass is a survivor, a gap in the tests (or an equivalent
mutation, to be explained). Exits 1 when any survived, 2 on an error (a mutation that no
longer applies, tests that fail before any mutation).

    python scripts/mutate.py              # every mutation, then a table
    python scripts/mutate.py --list       # the mutations
    python scripts/mutate.py --only writer-no-symlink-check --only cache-key-ignores-settings

The checkout is shared with whoever edits it meanwhile: a mutation is applied to the file's
current text, only for the seconds its tests take; the restore puts back the bytes and the
modification time it found (so that compiled bytecode of the original stays valid, and none
of the mutant's is trusted: the tests run with PYTHONDONTWRITEBYTECODE=1, and the mutant gets
a modification time of its own). Should the file change while mutated, only the mutation is
undone in the new text. Mutations run one at a time (`--jobs 1`): every test run reads the one
checkout, so two mutants at once would see each other.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = "src/cudalint/"


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # below src/cudalint/
    old: str
    new: str
    tests: tuple[str, ...]
    description: str


def _m(name: str, path: str, old: str, new: str, tests: str, description: str) -> Mutation:
    return Mutation(name, path, old, new, tuple(tests.split()), description)


DEVICE_TESTS = "tests/runtime/test_device.py"
GUARD_TESTS = "tests/rules/cud1/test_guards.py tests/rules/cud1/test_cuda_api.py"
FIRST_PASS_TESTS = ("tests/engine/test_prefilter.py tests/engine/test_terms.py "
                    "tests/engine/test_within.py tests/engine/test_sparse.py")
IMPORT_TESTS = "tests/engine/test_local_imports.py tests/engine/test_edit_planner.py"
NOTEBOOK_TESTS = "tests/engine/test_notebook.py"
WRITER_TESTS = "tests/engine/test_hostile_writing.py"
CACHE_TESTS = "tests/engine/test_cache.py"
COMPARE_TESTS = "tests/runtime/smoke/test_compare.py"
DECISION_TESTS = "tests/report/test_decision.py"
OUTPUT_TESTS = "tests/output/test_ci_formats.py tests/output/test_counts.py tests/test_cli.py"
SARIF_TESTS = "tests/output/test_ci_formats.py"
NOQA_TESTS = "tests/engine/test_noqa.py"

MUTATIONS: tuple[Mutation, ...] = (
    # -- the device helper ---------------------------------------------------------------------
    _m("device-named-cuda-returned-as-is", "device.py",
       'if named is not None and named.type != "cuda":',
       'if named is not None and named.type == "cuda":',
       DEVICE_TESTS, "pick_device('cuda:1') returned without asking whether CUDA is there"),
    _m("device-negative-index-accepted", "device.py",
       "    if value < 0:\n", "    if value < -1:\n",
       DEVICE_TESTS, "off by one: pick_device(-1) accepted"),
    _m("device-env-override-ignored", "device.py",
       "    if not value:\n        return None\n", "    if True:\n        return None\n",
       DEVICE_TESTS, "CUDALINT_DEVICE no longer read"),
    # -- guards --------------------------------------------------------------------------------
    _m("guards-and-or-swapped", "engine/walk/guards.py",
       "return (left or right) if isinstance(expr.operator, cst.And) else (left and right)",
       "return (left and right) if isinstance(expr.operator, cst.And) else (left or right)",
       GUARD_TESTS, "`probe and other` no longer a guard, `probe or other` one"),
    _m("guards-cuda-index-string-missed", "engine/walk/guards.py",
       'return isinstance(value, str) and (value == "cuda" or value.startswith("cuda:"))',
       'return isinstance(value, str) and value == "cuda"',
       GUARD_TESTS, '`device == "cuda:0"` no longer a CUDA comparison'),
    _m("guards-is-cuda-not-a-probe", "engine/walk/guards.py",
       'if isinstance(expr, cst.Attribute) and expr.attr.value == "is_cuda":\n        return True',
       'if isinstance(expr, cst.Attribute) and expr.attr.value == "is_cuda":\n        return False',
       GUARD_TESTS, "`if x.is_cuda:` no longer guards"),
    _m("guards-nearest-block-only", "engine/walk/context.py",
       "return bool(self._after_exits) or any(self._guards)",
       "return bool(self._after_exits) or bool(self._guards and self._guards[-1])",
       "tests/rules/cud1/test_guards.py",
       "a finding under `if torch.cuda.is_available():` loses its guard behind another `if`"),
    # -- the first pass ------------------------------------------------------------------------
    _m("first-pass-escapes-ignored", "engine/first_pass/prefilter.py",
       "return name in text or LETTER_ESCAPE.search(text) is not None",
       "return name in text",
       FIRST_PASS_TESTS + " tests/rules/cud1/test_device_selection.py",
       'a module writing "mps" only through an escape ("\\x6dps") is said not to name MPS'),
    _m("first-pass-calls-ignored", "engine/first_pass/prefilter.py",
       "return not self.words.isdisjoint(words) or not self.calls.isdisjoint(words)",
       "return not self.words.isdisjoint(words)",
       FIRST_PASS_TESTS, "a rule's `calls` terms no longer keep a file"),
    _m("first-pass-one-line-unit-unindented", "engine/first_pass/sparse.py",
       "lines[unit.first - 1] = indent + b'b\"\"' + _ending(head)",
       "lines[unit.first - 1] = b'b\"\"' + _ending(head)",
       FIRST_PASS_TESTS, "a blanked one-line method loses its indentation"),
    _m("first-pass-aliased-method-hidden", "engine/first_pass/outline.py",
       "and not reach.reads(m.words, m.text, m.node, m.first))", ")",
       "tests/engine/test_sparse.py",
       "a sparse read hides a method that uses `sync` of `from torch.cuda import synchronize "
       "as sync`: its finding is lost"),
    _m("first-pass-aliased-method-skipped", "engine/first_pass/outline.py",
       "and not reach.reads_statement(m)}", "}",
       "tests/engine/test_sparse.py",
       "a whole read's walk skips a method that names only an import's alias"),
    # -- the fixer and its imports -------------------------------------------------------------
    _m("imports-emptied-import-kept", "engine/fixes/imports.py",
       "    return gone - unread(before, gone)\n",
       "    return set()\n",
       IMPORT_TESTS, "--fix keeps an import whose last use it rewrote"),
    _m("imports-still-used-import-removed", "engine/fixes/imports.py",
       "    gone = unread(after, imported)\n",
       "    gone = imported\n",
       IMPORT_TESTS, "--fix removes an import the module still reads"),
    _m("imports-edits-remove-nothing", "engine/fixes/fixer.py",
       "        return [e.as_edit() for e in imports.removal_edits(self.layout, unused)]",
       "        return []",
       IMPORT_TESTS, "a fix's edits (JSON, the language server) keep an emptied import"),
    _m("imports-whole-from-line-dropped", "engine/fixes/imports.py",
       "        if not kept:\n            edits.append(LineEdit(",
       "        if True:\n            edits.append(LineEdit(",
       IMPORT_TESTS, "`from m import a, b` removed whole when only `a` was emptied"),
    # (a notebook's helper is inline, placed by notebook_imports since issue 43)
    _m("notebook-magic-line-not-skipped", "engine/fixes/notebook_imports.py",
       '_LEADING = re.compile(r"[ \\t]*(?:[%!#].*)?\\n?")',
       '_LEADING = re.compile(r"[ \\t]*(?:#.*)?\\n?")',
       NOTEBOOK_TESTS, "the helper goes above a cell's `!pip`/`%magic` lines"),
    _m("notebook-cell-magic-cell-used", "engine/fixes/notebook_imports.py",
       'if cell is None or cell.python is None or sources[first_use].startswith("%%") \\',
       "if cell is None or cell.python is None \\",
       NOTEBOOK_TESTS, "the helper is put in a `%%time` cell, under its magic line"),
    # -- the writer ----------------------------------------------------------------------------
    _m("writer-no-symlink-check", "writing.py",
       "info: os.stat_result) -> None:\n    if stat.S_ISLNK(info.st_mode):\n",
       "info: os.stat_result) -> None:\n    if False:\n",
       WRITER_TESTS, "a symbolic link is not refused by name (O_NOFOLLOW still stops it)"),
    _m("writer-read-only-mode-ignored", "writing.py",
       "if not mode & 0o222 or not os.access(path, os.W_OK):",
       "if not os.access(path, os.W_OK):",
       WRITER_TESTS, "root replaces a file whose mode says nobody may write it"),
    # (Dropping only the check before the lock is equivalent: the check under the lock, in
    # `_swap_in`, refuses the same files.)
    _m("writer-no-change-check", "writing.py",
       "    if current != original:\n        raise WriteError(",
       "    if False:\n        raise WriteError(",
       WRITER_TESTS, "a file saved in an editor meanwhile is overwritten"),
    _m("writer-no-check-under-the-lock", "writing.py",
       "        _require_unchanged(_read_from(old, len(original)), original)\n",
       "",
       WRITER_TESTS, "a save landing between the first check and the lock is overwritten"),
    _m("writer-mode-not-kept", "writing.py",
       "            os.fchmod(file.fileno(), stat.S_IMODE(info.st_mode))",
       "            pass",
       WRITER_TESTS, "the fixed file takes the temporary file's mode (0600)"),
    # -- the cache -----------------------------------------------------------------------------
    _m("cache-key-ignores-settings", "engine/running/cache.py",
       "head = \"\\0\".join((self.salt, os.path.abspath(path), kind.value, _settings(settings),",
       "head = \"\\0\".join((self.salt, os.path.abspath(path), kind.value,",
       CACHE_TESTS, "a changed setting (the target torch) replays stale findings"),
    _m("cache-status-trusted-always", "engine/running/cache.py",
       "if status is not None and _well_formed(known) and _status(known) == status:",
       "if _well_formed(known):",
       CACHE_TESTS, "an edited file is replayed from the index without being read"),
    _m("cache-change-time-ignored", "engine/running/cache.py",
       "if s.st_ctime_ns > now - _SETTLED_NS or s.st_mtime_ns > now - _SETTLED_NS:",
       "if s.st_mtime_ns > now - _SETTLED_NS:",
       CACHE_TESTS, "a file whose mtime was set back right after an edit counts as settled"),
    # -- the smoke comparison ------------------------------------------------------------------
    _m("compare-loosest-dtype-tolerance-lost", "runtime/smoke/compare.py",
       "rtol = max(pair[0] for pair in defaults)",
       "rtol = min(pair[0] for pair in defaults)",
       COMPARE_TESTS, "float32 vs float16 compared at float32's rtol"),
    _m("compare-int-and-float-exact", "runtime/smoke/compare.py",
       "exact = isinstance(got, int) and isinstance(want, int)",
       "exact = isinstance(got, int) or isinstance(want, int)",
       COMPARE_TESTS, "a float compared exactly with an int reference"),
    _m("compare-indexed-output-tolerance-lost", "runtime/smoke/compare.py",
       'if path == name or path.startswith((f"{name}[", f"{name}."))]',
       'if path == name or path.startswith((f"{name}.",))]',
       COMPARE_TESTS, "a `model` tolerance no longer covers `model[0]`"),
    _m("compare-nan-in-the-run-ignored", "runtime/smoke/compare.py",
       "bad = ~equal & ((nan_a ^ nan_e) | ~(diff",
       "bad = ~equal & (nan_e | ~(diff",
       COMPARE_TESTS, "NaN in the run checked (the typical MPS failure) passes against a number"),
    # (`(nan_a ^ nan_e)` -> `nan_a` in `bad` is equivalent: NaN in the reference makes the
    # tolerance NaN, which no difference is within.)
    _m("compare-nan-in-the-reference-equal", "runtime/smoke/compare.py",
       "equal = (a == e) | (nan_a & nan_e)",
       "equal = (a == e) | nan_e",
       COMPARE_TESTS, "a NaN element of the reference counts as equal to whatever the run has"),
    _m("compare-nan-in-the-run-equal", "runtime/smoke/compare.py",
       "equal = (a == e) | (nan_a & nan_e)",
       "equal = (a == e) | nan_a",
       COMPARE_TESTS, "a NaN element of the run counts as equal to whatever the reference has"),
    _m("compare-nan-number-in-the-run-ignored", "runtime/smoke/compare.py",
       "return cmath.isnan(got) and cmath.isnan(want)",
       "return cmath.isnan(got)",
       COMPARE_TESTS, "a returned NaN loss passes against the reference's number"),
    _m("compare-nan-number-difference-passes", "runtime/smoke/compare.py",
       "if not math.isnan(diff) and diff <= atol + rtol * abs(want):",
       "if math.isnan(diff) or diff <= atol + rtol * abs(want):",
       COMPARE_TESTS, "a number NaN on either side passes"),
    # -- the report's decision -----------------------------------------------------------------
    _m("decision-failed-mps-run-not-refused", "report/decision.py",
       "    if blockers or failed_mps:\n", "    if blockers:\n",
       DECISION_TESTS, "a smoke run that failed on MPS no longer refuses the Mac"),
    _m("decision-predicted-hazard-ignored", "report/decision.py",
       "    elif by_hand or failed_off or predicted:\n", "    elif by_hand or failed_off:\n",
       DECISION_TESTS, "a CPU pass with a predicted MPS hazard allows the Mac"),
    _m("decision-stale-runs-decide", "report/decision.py",
       "    runs = tuple(run for run in given if run.current)\n", "    runs = given\n",
       DECISION_TESTS, "a smoke run of older code counts as evidence"),
    _m("decision-uncompared-mps-run-confirms", "report/decision.py",
       "confirmed = [run for run in runs if run.on_mps and run.compared]",
       "confirmed = [run for run in runs if run.on_mps]",
       DECISION_TESTS,
       "an MPS pass that compared nothing is reported 'passed on MPS with outputs within "
       "tolerance'"),
    _m("decision-skipped-comparison-counts", "report/evidence.py",
       'return self.statuses.get("compare") == "pass"',
       'return self.statuses.get("compare") != "fail"',
       DECISION_TESTS, "a skipped compare check counts as a comparison that passed"),
    # -- rules and their data (issue 32's behaviours) ---------------------------------------------
    _m("cud601-float64-on-the-cpu-reported", "rules/cud6_mps/float64.py",
       "if state.site is not None and state.on_device:",
       "if state.site is not None:",
       "tests/rules/cud6/test_float64.py", "a float64 tensor that stays on the CPU is reported"),
    _m("cud601-factory-device-ignored", "rules/cud6_mps/float64.py",
       "on_device = is_off_cpu(self, device.value) if device is not None else inherited",
       "on_device = inherited",
       "tests/rules/cud6/test_float64.py",
       "`torch.zeros(3, dtype=torch.float64, device=device)` not reported"),
    _m("cuda-table-stream-said-to-raise", "data/torch_cuda_api.toml",
       '[api."torch.cuda.stream"]\ncode = "CUD110"\noff_cuda = "noop"',
       '[api."torch.cuda.stream"]\ncode = "CUD110"\noff_cuda = "raises"',
       "tests/rules/cud1/test_cuda_api_table.py",
       "the table says `torch.cuda.stream` raises off CUDA (it does nothing)"),
    # -- the output formats --------------------------------------------------------------------
    _m("output-guarded-not-marked", "output/common.py",
       "return finding.message + GUARDED if finding.guarded else finding.message",
       "return finding.message",
       OUTPUT_TESTS, "a guarded finding's message says nothing of its guard"),
    _m("output-json-column-off-by-one", "output/json_format.py",
       'return {"row": position.row, "column": position.column}',
       'return {"row": position.row, "column": position.column - 1}',
       OUTPUT_TESTS, "JSON columns 0-based, unlike ruff's"),
    _m("output-github-newline-unescaped", "output/github.py",
       '.replace("\\r", "%0D").replace("\\n", "%0A")',
       '.replace("\\r", "%0D")',
       OUTPUT_TESTS, "a multi-line message breaks a GitHub workflow command"),
    _m("sarif-end-line-is-the-start", "output/sarif.py",
       '"endLine": finding.end_location.row,', '"endLine": finding.location.row,',
       SARIF_TESTS, "a SARIF region of a finding over several lines ends on its first line"),
    _m("sarif-end-column-off-by-one", "output/sarif.py",
       '"endColumn": finding.end_location.column,',
       '"endColumn": finding.end_location.column + 1,',
       SARIF_TESTS, "a SARIF region ends one column late"),
    # -- suppression, project settings, fixes, duplicates (issue 32's regressions) ----------------
    _m("noqa-last-line-ignored", "engine/locate/noqa.py",
       "for row in {finding.location.row, finding.end_location.row}:",
       "for row in {finding.location.row}:",
       NOQA_TESTS, "`# noqa` on the last line of a finding over several lines is ignored"),
    _m("noqa-last-line-not-read", "engine/lint/python.py",
       "rows = {row for _, f in found for row in (f.location.row, f.end_location.row)}",
       "rows = {f.location.row for _, f in found}",
       NOQA_TESTS, "the comments of a finding's last line are never tokenized"),
    _m("noqa-code-ignored", "engine/locate/noqa.py",
       'if codes is not None and (codes is _ALL or "*" in codes or finding.code in codes):',
       "if codes is not None:",
       NOQA_TESTS, "`# noqa: CUD109` silences every code on its line"),
    _m("floor-requirements-folder-ignored", "engine/project/torch_floor.py",
       'paths = [*root.glob("requirements*.txt"), *root.glob("requirements/*.txt")]',
       'paths = [*root.glob("requirements*.txt")]',
       "tests/engine/test_fix_output.py",
       "a torch floor in requirements/base.txt is not read: fixes assume another torch"),
    _m("fix-cuda-index-dropped", "rules/cud1_device/cuda_method.py",
       "    return [cst.Arg(given)]\n", "    return []\n",
       "tests/engine/test_fix_safety.py", "`.cuda(0)` fixed to `.to(pick_device())`"),
    _m("findings-not-deduplicated", "engine/lint/python.py",
       "if key in seen or noqa.is_suppressed(finding, suppress):",
       "if noqa.is_suppressed(finding, suppress):",
       "tests/rules/test_research_repo.py",
       "a finding two visits report alike is listed twice (the demo has no such shape)"),
    _m("output-findings-listed-twice", "output/common.py",
       "return sorted((f for r in reports for f in r.findings), key=Finding.sort_key)",
       "return sorted((f for r in reports for f in (*r.findings, *found_before(r))),\n"
       "                  key=Finding.sort_key)",
       "tests/test_demo.py", "every finding of a check is listed twice (a set hides it)"),
    # -- issues 43 and 45: helper placement, the helper's extension, emptied imports ------------
    _m("helper-place-first-of-several-root-packages", "engine/project/helper_place.py",
       "    if len(packages) == 1:\n", "    if packages:\n",
       "tests/engine/test_helper_place_folders.py",
       "root scripts of a project with several packages import configs._device"),
    _m("helper-place-imported-by-name-ignored", "engine/project/helper_place.py",
       "if folder == root or not fixing or _imported_by_name(folder, root):",
       "if folder == root or not fixing:",
       "tests/engine/test_helper_place_folders.py",
       "a plain folder imported by dotted name gets an inline copy, not the root helper"),
    _m("local-import-partly-emptied-dropped-whole", "engine/fixes/local_imports.py",
       "kept = [alias for local, alias in bound_by(node) if local not in gone]",
       "kept = []",
       "tests/engine/test_local_imports.py",
       "`from torch.cuda.amp import GradScaler, autocast` deleted while GradScaler is read"),
    _m("helper-import-above-the-sys-path-set-up", "engine/fixes/imports.py",
       "    setup = after_path_setup(layout)  # the helper is imported where the project's code is",
       "    setup = None",
       "tests/engine/test_path_setup_imports.py",
       "`from _device import ...` above `sys.path.append(str(ROOT))`: ModuleNotFoundError"),
    _m("helper-root-init-makes-a-package", "engine/project/helper_place.py",
       "top = _top_package(folder, root if _marks_a_project(root) else None)",
       "top = _top_package(folder)",
       "tests/engine/test_helper_place_folders.py",
       "a root holding __init__.py: its scripts import <root-folder>._device"),
    _m("helper-device-package-not-seen", "engine/project/helper_place.py",
       'if entry == name or entry.endswith((".py", ".pyc", ".so", ".pyd")):',
       'if entry.endswith((".py", ".pyc", ".so", ".pyd")):',
       "tests/engine/test_helper_place_folders.py",
       "pkg/_device/ (a package) shadows the written pkg/_device.py"),
    _m("helper-extension-regenerates-the-file", "engine/fixes/helper_file.py",
       "    write_fixed(path, extended(data, names), data)",
       "    write_fixed(path, helper_module_text(names | have).encode(), data)",
       "tests/engine/test_helper_extension.py",
       "a later fix rewrites the helper from the names: the user's functions and lines lost"),
    _m("notebook-inline-helper-after-the-imports", "engine/fixes/notebook_imports.py",
       "    if helper_module == INLINE_MODULE and wanted.helpers:",
       "    if False:",
       "tests/engine/test_notebook.py",
       "the inline helper after a cell's imports: never defined where one of them fails"),
    # -- issue 44: the one writer's rewrite in place, the one reader of the helper --------------
    _m("writer-in-place-not-restored", "writing.py",
       "            except BaseException:\n                _restore(path, descriptor, original)\n",
       "            except BaseException:\n",
       "tests/engine/test_hostile_full_disk.py",
       "a rewrite in place failing half way (a full disk) leaves the file cut there"),
    _m("writer-in-place-not-written-beside", "writing.py",
       "        with _written_beside(path, data):  # no room for it: nothing is touched\n",
       "        with contextlib.nullcontext():\n",
       "tests/engine/test_hostile_full_disk.py",
       "the file is rewritten before the new text is whole on disk: a process killed half way"
       " loses both texts"),
    _m("helper-read-blocks-on-a-fifo", "engine/fixes/helper_file.py",
       "        data = read_regular(path, MAX_HELPER_SIZE, follow=False)\n",
       '        data = open(path, "rb").read(MAX_HELPER_SIZE)\n',
       "tests/engine/test_hostile_fifos.py",
       "a `_device.py` FIFO blocks --fix, --diff and the editor's fix-all forever"),
    # -- issue 40: one answer whatever the way in (a file's facts come from its project)
    _m("facts-root-from-checked-path", "engine/running/project_facts.py",
       "    return find_project_root(folder) or project_root(config)\n",
       "    return config.root\n",
       "tests/test_parity.py",
       "project facts read from the folder a run starts at: `check pkg/` reports CUD201 on the "
       "project's own imports and misses the CUD305 of its own extension"),
    _m("facts-root-ignores-setup-py", "config.py",
       'ROOT_MARKERS = ("pyproject.toml", "setup.py")', 'ROOT_MARKERS = ("pyproject.toml",)',
       "tests/engine/test_project_facts.py",
       "a folder with its own setup.py inside a repository is not a project of its own"),
    _m("facts-cache-ignores-status", "engine/running/facts_cache.py",
       "if status is not None and _well_formed(known) and known[0] == list(status):",
       "if _well_formed(known):",
       "tests/engine/test_project_facts.py",
       "a file's scan facts are replayed after it changed: a new `cuda` method goes unseen"),
    _m("facts-cache-ignores-root-files", "engine/running/facts_cache.py",
       "if isinstance(known, list) and len(known) == 2 and known[0] == _plain(statuses):",
       "if isinstance(known, list) and len(known) == 2:",
       "tests/engine/test_project_facts.py",
       "a changed or new requirements file does not change the torch floor of a cached run"),
    # -- issue 45: SARIF of unparseable files, the cache key's ignore, tests that skipped -----
    _m("sarif-file-error-rule-id-null", "output/sarif.py",
       '"ruleId": finding.code or FILE_ERROR,', '"ruleId": finding.code,',
       "tests/output/test_ci_formats.py",
       "a file that does not parse gets `ruleId: null`: the SARIF schema and code scanning "
       "refuse the report"),
    _m("cache-key-without-ignore", "engine/running/runner.py",
       "return [_sources(config, options), per_file,",
       "return [[(s.select, s.extend_select) for s in _sources(config, options)], per_file,",
       "tests/engine/test_cache.py",
       "an `ignore` added on the command line or in the configuration replays the ignored "
       "code's findings from the cache"),
    _m("local-imports-emptied-kept", "engine/fixes/local_imports.py",
       "                drop[id(statement)] = gone", "                pass",
       "tests/engine/test_local_imports.py::test_the_fix_adds_no_unused_import",
       "a function's import that its fixes emptied stays (F401; the ruff test skipped "
       "without ruff on PATH)"),
    _m("depth-gate-limit-lifted", "engine/reading/depth.py",
       "MAX_DEPTH = 120", "MAX_DEPTH = 10_000",
       "tests/engine/test_deep_chains.py::"
       "test_cpython_compiles_it_and_the_gate_refuses_it_before_libcst",
       "an 8,000-term chain reaches LibCST's native parser, which overflows the C stack"),
    _m("lsp-debounce-no-leading-edge", "lsp/linter.py",
       "(CHECK, uri) not in self._asked:\n            delay = 0.0\n",
       "(CHECK, uri) not in self._asked:\n            pass\n",
       "tests/lsp/test_versions.py::test_the_debounce_has_a_leading_edge",
       "the first edit after a still spell waits out the debounce (issue 42: the test that "
       "caught it timed it, and failed under load)"),
    _m("lsp-debounce-while-idle", "lsp/linter.py",
       " >= delay or (CHECK, uri) not in self._asked:", " >= delay:",
       "tests/lsp/test_versions.py::test_the_debounce_has_a_leading_edge",
       "an edit after the last check is over still waits out the debounce when it follows "
       "the one before closely (issue 46: 87 ms per edit, p50)"),
    _m("unit-key-amp-whole-module", "lsp/unit_keys.py",
       'WHOLE_MODULE_WORDS = (b"from_numpy",)', 'WHOLE_MODULE_WORDS = (b"from_numpy", b"cuda.amp")',
       "tests/lsp/test_incremental.py::"
       "test_a_unit_calling_the_amp_api_is_reused_after_an_edit_elsewhere",
       "a unit calling `torch.cuda.amp.GradScaler()` is read again at every edit (issue 46)"),
    # -- issue 39: the training check, requested checks, the tolerance declared first, reach ----
    _m("training-constant-loss-accepted", "runtime/smoke/training.py",
       "if len(losses) >= 2 and len(set(losses)) == 1:",
       "if len(losses) >= 2 and len(set(losses)) == 0:",
       "tests/runtime/smoke/test_training.py", "a loss that never changes is not named constant"),
    _m("training-zero-gradients-accepted", "runtime/smoke/training.py",
       "zero = [key for key in should if all(step.grads.get(key) != OK for step in steps)]",
       "zero: list[int] = []",
       "tests/runtime/smoke/test_training.py", "parameters that get no gradient pass"),
    _m("training-cut-loss-reaches-nothing-asked", "runtime/smoke/training.py",
       "should = [key for key in run.params if key in reached] if reached else list(run.params)",
       "should = [key for key in run.params if key in reached]",
       "tests/runtime/smoke/test_training.py",
       "a loss cut from the model's graph asks no parameter for a gradient"),
    _m("training-frozen-weights-accepted", "runtime/smoke/training.py",
       "frozen = [key for key in graded if not any(key in step.changed for step in steps)]",
       "frozen: list[int] = []",
       "tests/runtime/smoke/test_training.py", "steps that change no weight pass"),
    _m("training-nan-loss-accepted", "runtime/smoke/training.py",
       "if step.loss is not None and not math.isfinite(step.loss):",
       "if step.loss is not None and math.isinf(step.loss):",
       "tests/runtime/smoke/test_training.py", "a NaN loss is not named"),
    _m("requested-check-not-run-passes", "runtime/smoke/report.py",
       'return "fail" if failed or self.unmet else "pass"',
       'return "fail" if failed else "pass"',
       "tests/runtime/smoke/test_kill.py",
       "--kill-after on a target that cannot be killed and resumed leaves the verdict pass"),
    _m("tolerance-undeclared-counts-as-first", "report/checklist.py",
       "if not declared_first(run.tolerance):", "if False:",
       "tests/report/test_tolerance_first.py",
       "a defaulted tolerance checks the checklist's tolerance item"),
    _m("reach-whole-file-hazards", "runtime/smoke/reach.py",
       "inside = row.isdigit() and int(row) in lines.get(name, set())", "inside = True",
       "tests/runtime/smoke/test_reach.py",
       "a finding in a function the target never calls is this run's hazard"),
    # -- issue 45: items 4-6 and staleness; issues 39 and 44: evidence of a real run ------------
    _m("identity-any-verdict-accepted", "runtime/smoke/identity.py",
       '"verdict": schema.OneOf(VERDICTS),', '"verdict": schema.STRING,',
       "tests/report/test_identity.py",
       'a smoke JSON with "verdict": "skipped" is evidence (it turned the sheet mps-refused)'),
    _m("tested-cpu-reference-fills-cuda-column", "report/tested.py",
       'and comparison.against == "reference" and comparison.device == "cuda"]',
       'and comparison.against == "reference"]',
       "tests/report/test_tested.py",
       'a reference saved on the CPU fills the "CUDA reference" column with pass'),
    _m("tested-warn-is-not-run", "report/tested.py",
       'if run.statuses.get(check) in ("pass", "warn", "fail")]',
       'if run.statuses.get(check) in ("pass", "fail")]',
       "tests/report/test_tested.py", 'a check that ended in warn shows as "not run"'),
    _m("identity-deleted-file-current", "runtime/smoke/identity.py",
       "        if current is None:\n            gone.append(relative)\n"
       "        elif current != digest:\n",
       "        if current is not None and current != digest:\n",
       "tests/report/test_identity.py", "a file deleted since the run still counts as current"),
    _m("identity-other-commit-current", "runtime/smoke/identity.py",
       'now["commit"] and project["commit"] != now["commit"]:',
       'now["commit"] and project["commit"] != now["commit"] and False:',
       "tests/report/test_identity.py", "a run of another commit counts as current"),
    _m("identity-mps-on-linux-accepted", "runtime/smoke/identity.py",
       'if kind == "mps" and (env["os"], env["machine"]) != ("Darwin", "arm64"):',
       'if kind == "mps" and env["os"] == "Windows":',
       "tests/report/test_forged_evidence.py",
       "a Linux run relabelled mps confirms MPS"),
    _m("identity-flipped-statuses-accepted", "runtime/smoke/identity.py",
       'if data.get("error") and statuses.get("run") != "fail":',
       'if data.get("error") and statuses.get("run") is None:',
       "tests/report/test_forged_evidence.py",
       "a crashed run with its statuses flipped to pass is evidence"),
    _m("identity-flipped-check-accepted", "runtime/smoke/identity.py",
       'if check["status"] != "fail" and words is not None',
       'if check["status"] == "skipped" and words is not None',
       "tests/report/test_forged_evidence.py",
       "a failed compare, determinism or checkpoint check flipped to pass is evidence"),
    _m("identity-compare-over-tolerance-accepted", "runtime/smoke/identity.py",
       "if allowed is not None and value > allowed:",
       "if allowed is not None and value > allowed * 1e6:",
       "tests/report/test_forged_evidence.py",
       "a passing compare whose largest difference exceeds what it allowed is evidence"),
    _m("checks-allowed-at-the-tighter-dtype", "runtime/smoke/checks.py",
       "rtol, atol = tolerance.for_dtypes(dtype_name(got), dtype_name(want))",
       "rtol, atol = tolerance.for_dtypes(dtype_name(want))",
       COMPARE_TESTS, "the bound a pass states is float32's where float16 was compared: the "
       "report would refuse a real run"),
    _m("schema-nan-is-a-number", "runtime/smoke/schema.py",
       "return isinstance(value, (int, float)) and math.isfinite(value)",
       "return isinstance(value, (int, float))",
       "tests/report/test_forged_evidence.py", "a NaN or infinite tolerance is evidence"),
    _m("identity-files-hashed-per-spelling", "runtime/smoke/identity.py",
       "        if path not in digests:\n", "        if True:\n",
       "tests/report/test_forged_evidence.py",
       "a file named twenty ways is hashed twenty times"),
    _m("report-escapes-printed-raw", "report/render.py",
       "        self.console.print(shown(text), style=style, markup=False)",
       "        self.console.print(text, style=style, markup=False)",
       "tests/report/test_forged_evidence.py",
       "terminal escapes in the evidence reach the terminal"),
    _m("reference-leaves-unchecked", "runtime/smoke/reference.py",
       '    _valid(DOCUMENT, document, path)\n', "",
       "tests/runtime/smoke/test_reference_metadata.py",
       "malformed reference metadata is an internal error after the target is imported"),
    _m("signals-own-run-stops-smoke", "runtime/smoke/signals.py",
       "        if sender > 0 and of_the_run(sender, child, mark):",
       "        if sender > 0 and of_the_run(sender, child, mark) and False:",
       "tests/runtime/smoke/test_stopping.py",
       "a target that signals its parent stops smoke's run"),
    _m("isolation-output-kept-whole", "runtime/smoke/isolation.py",
       "    if size <= 2 * KEPT_BYTES:", "    if True:",
       "tests/runtime/smoke/test_stopping.py", "a target's whole output is kept in memory"),
    # -- issues 39 and 45 joined: the evidence checks read the training check's sections -------
    _m("identity-differences-ignored", "runtime/smoke/identity.py",
       'return (_differences_contradiction(data.get("differences", []))\n'
       '                or _compare_contradiction(compare["detail"]))',
       'return _compare_contradiction(compare["detail"])',
       "tests/report/test_forged_evidence.py",
       "a passing compare whose recorded differences exceed their tolerance is evidence"),
    _m("identity-pass-over-unmet-request-accepted", "runtime/smoke/identity.py",
       'if data["verdict"] == "pass" and unmet:', 'if data["verdict"] == "pass" and False:',
       "tests/report/test_forged_evidence.py",
       "a pass over a check asked for and not carried out is evidence"),
    _m("identity-fail-from-unmet-request-refused", "runtime/smoke/identity.py",
       'if data["verdict"] == "fail" and not failed and not unmet:',
       'if data["verdict"] == "fail" and not failed:',
       "tests/report/test_forged_evidence.py",
       "a real --kill-after run that could not be resumed (fail, exit 2) is refused"),
    _m("identity-training-loss-up-accepted", "runtime/smoke/identity.py",
       "if len(known) >= 2 and not known[-1] < known[0]:", "if False:",
       "tests/report/test_forged_evidence.py",
       "a passing training check whose loss went up is evidence"),
    _m("identity-training-flip-accepted", "runtime/smoke/identity.py",
       '    "training": re.compile(', '    "training-unread": re.compile(',
       "tests/report/test_forged_evidence.py",
       "a failed training check flipped to pass is evidence"),
    _m("compare-non-finite-difference-bare", "runtime/smoke/compare.py",
       'row.update(max_abs=json_number(row["max_abs"]),', 'row.update(max_abs=row["max_abs"],',
       COMPARE_TESTS, "an infinite difference is written as a bare Infinity, no JSON"),
    _m("training-runs-keyed-by-id", "runtime/smoke/training.py",
       "key = self._keys[optimizer] = next(self._made)",
       "key = self._keys[optimizer] = id(optimizer)",
       "tests/runtime/smoke/test_training.py",
       "an optimizer given a freed one's id continues its run (the demo's chart: 3 steps of 2)"),
    # -- issue 41: accuracy round three; issue 45's CUD103 and float64 arithmetic ------------------
    _m("cud103-statement-form-ignored", "rules/cud1_device/device_choice.py",
       "    if not isinstance(node.orelse, cst.Else):\n        return None\n",
       "    if True:\n        return None\n",
       "tests/rules/cud1/test_device_selection.py",
       "the if/else form of a CUDA-or-CPU choice is not reported"),
    _m("cud103-reversed-test-ignored", "rules/cud1_device/device_choice.py",
       "        return other, then, _exact_probe(ctx, test.expression)",
       "        return None",
       "tests/rules/cud1/test_device_selection.py",
       '`"cpu" if not torch.cuda.is_available() else "cuda"` is not reported'),
    _m("cud103-users-flag-fixed", "rules/cud1_device/device_choice.py",
       'if not choice.exact_probe or not self.ctx.helper_available("pick_device"):',
       'if not self.ctx.helper_available("pick_device"):',
       "tests/rules/cud1/test_device_selection.py",
       "a choice that also reads a user's flag is rewritten to pick_device(), which ignores it"),
    _m("cud101-choice-branch-ignored", "rules/cud1_device/hardcoded_device.py",
       "        while isinstance(branch := self.ctx.parent(level), cst.IfExp) \\\n",
       "        while False and isinstance(branch := self.ctx.parent(level), cst.IfExp) \\\n",
       "tests/rules/cud1/test_device_selection.py",
       '`x.to("cuda" if cfg.fp16 else "cpu")`: the bare "cuda" a choice gives a device is silent'),
    _m("cud601-arithmetic-not-followed", "rules/cud6_mps/dtypes.py",
       "        return float64_array(rule, expr.left, depth + 1) \\\n"
       "            or float64_array(rule, expr.right, depth + 1)\n",
       "        return False\n",
       "tests/rules/cud6/test_float64.py",
       "`torch.from_numpy(np.ones(3) * 0.5).to(device)`: float64 through arithmetic is lost"),
    _m("cud402-off-macos-pins-one-each", "rules/cud4_pins/pip.py",
       "            if problem is not None and problem.off_macos:",
       "            if False:",
       "tests/rules/cud4/test_lock_exports.py",
       "a lock export's 14 marker-excluded CUDA pins are 14 findings again"),
    _m("cud102-fix-calls-itself", "rules/cud1_device/cuda_method.py",
       'or own_methods.calls_itself(self.ctx, func.value, "to"):',
       "or False:",
       "tests/engine/test_fix_safety.py",
       "`self.cuda()` inside `def to(self)` fixed to `self.to(...)`: infinite recursion"),
    _m("shell-chain-after-a-users-setting-guards", "formats/shell.py",
       "(chained or _chain_probe(words, negated))",
       "(chained or mentions_probe(words))",
       "tests/rules/cud5/test_scripts.py",
       '`[ -z "$n_gpu" ] && n_gpu=$(nvidia-smi -L | wc -l)` counts as a guard'),
    # -- issue 46: the fix simulation reads only the units near a fix; the opening's handover --
    _m("nearby-blanks-the-units-it-needs", "engine/lint/nearby.py",
       "        if not holds(unit):\n            hidden.append(unit)\n",
       "        if holds(unit):\n            hidden.append(unit)\n",
       "tests/engine/test_nearby.py",
       "the simulation blanks the units holding the nearby findings and reads the others"),
    _m("nearby-helper-blanked", "engine/lint/nearby.py",
       "        if unit.name in helpers:\n            continue\n", "",
       "tests/engine/test_nearby.py",
       "a helper function a fix calls is blanked: the simulated fix imports it again"),
    _m("handover-check-dropped", "lsp/handover.py",
       "data = pickle.dumps(begun.handed(arrived), protocol=pickle.HIGHEST_PROTOCOL)",
       "data = pickle.dumps(begun.handed(arrived, checked=False))",
       "tests/lsp/test_handover.py",
       "the child's check is not handed over: the server checks the first document again"),
)


class Interrupted(Exception):
    """SIGTERM, turned into an exception so that the `finally` restores the file."""


@dataclass
class Outcome:
    mutation: Mutation
    status: str  # killed, survived, timeout
    seconds: float
    by: str  # the first failing test, or why


def _interrupt(_number: int, _frame: object) -> None:
    raise Interrupted


def _apply(mutation: Mutation) -> tuple[Path, bytes, os.stat_result, str]:
    path = ROOT / SRC / mutation.path
    data = path.read_bytes()
    text = data.decode()
    count = text.count(mutation.old)
    if count != 1:
        raise SystemExit(f"error: {mutation.name}: the old text occurs {count} times in "
                         f"{SRC}{mutation.path} (must be exactly once); rewrite the mutation")
    return path, data, path.stat(), text.replace(mutation.old, mutation.new)


def _write_mutant(path: Path, mutant: str, before: os.stat_result) -> None:
    path.write_text(mutant)
    # A modification time of its own: bytecode compiled from the mutant by anyone else's run
    # meanwhile never passes for the original's once it is back.
    stamp = max(time.time_ns(), before.st_mtime_ns + 2_000_000_000)
    os.utime(path, ns=(stamp, stamp))


def _restore(path: Path, original: bytes, before: os.stat_result, mutation: Mutation,
             mutant: str) -> None:
    current = path.read_bytes().decode()
    if current == mutant:
        path.write_bytes(original)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        return
    if current.count(mutation.new) == 1 and mutation.new:  # edited meanwhile: undo ours only
        path.write_text(current.replace(mutation.new, mutation.old))
        print(f"warning: {path} changed while mutated; only the mutation was undone",
              file=sys.stderr)
        return
    aside = path.with_name(path.name + ".mutate-original")
    aside.write_bytes(original)
    raise SystemExit(f"error: {path} changed while mutated and the mutation cannot be found "
                     f"in it; the original is in {aside}: restore it by hand")


def _first_failure(output: str) -> str:
    found = re.search(r"^(?:FAILED|ERROR) (\S+)", output, re.MULTILINE)
    if found:
        return found.group(1)
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _pytest(files: tuple[str, ...], timeout: float, stop_first: bool) -> tuple[str, str]:
    """('pass'|'fail'|'timeout', the first failing test or the last line)."""
    command = [sys.executable, "-m", "pytest", *(["-x"] if stop_first else []), "-q",
               "-p", "no:cacheprovider", *files]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", f"over {timeout:.0f} s"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return ("pass" if process.returncode == 0 else "fail"), _first_failure(output)


def run_one(mutation: Mutation, timeout: float) -> Outcome:
    path, original, before, mutant = _apply(mutation)
    started = time.monotonic()
    try:
        _write_mutant(path, mutant, before)
        result, by = _pytest(mutation.tests, timeout, stop_first=True)
    finally:
        _restore(path, original, before, mutation, mutant)
    status = {"pass": "survived", "fail": "killed", "timeout": "timeout"}[result]
    return Outcome(mutation, status, time.monotonic() - started, by)


def _table(outcomes: list[Outcome]) -> str:
    width = max(len(o.mutation.name) for o in outcomes)
    rows = [f"{'mutation':<{width}}  {'status':<8}  {'s':>5}  caught by / description"]
    for o in outcomes:
        detail = o.by if o.status == "killed" else o.mutation.description
        rows.append(f"{o.mutation.name:<{width}}  {o.status:<8}  {o.seconds:5.0f}  {detail}")
    killed = sum(o.status != "survived" for o in outcomes)
    rows.append(f"{killed} of {len(outcomes)} killed, {len(outcomes) - killed} survived")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the mutations and exit")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only this mutation (repeatable)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="mutations at once; only 1 (they share the checkout)")
    parser.add_argument("--timeout", type=float, default=300,
                        help="seconds for one mutation's tests (default 300)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip running the tests once without any mutation")
    args = parser.parse_args(argv)
    if args.jobs != 1:
        parser.error("--jobs: only 1; every mutant is tested in the one checkout")
    chosen = list(MUTATIONS)
    if args.only:
        known = {m.name for m in MUTATIONS}
        unknown = sorted(set(args.only) - known)
        if unknown:
            parser.error(f"unknown mutation(s): {', '.join(unknown)} (see --list)")
        chosen = [m for m in MUTATIONS if m.name in args.only]
    if args.list:
        for m in chosen:
            print(f"{m.name}\n    {SRC}{m.path}: {m.description}\n    tests: {' '.join(m.tests)}")
        return 0
    for mutation in chosen:  # every mutation must still apply before any is run
        _apply(mutation)
    signal.signal(signal.SIGTERM, _interrupt)
    if not args.no_baseline:
        files = tuple(dict.fromkeys(f for m in chosen for f in m.tests))
        result, by = _pytest(files, args.timeout * 2, stop_first=False)
        if result != "pass":
            print(f"error: the tests do not pass unmutated ({result}: {by})", file=sys.stderr)
            return 2
    outcomes: list[Outcome] = []
    try:
        for mutation in chosen:
            outcome = run_one(mutation, args.timeout)
            outcomes.append(outcome)
            print(f"{outcome.status:<8} {mutation.name} ({outcome.seconds:.0f} s) {outcome.by}",
                  flush=True)
    except (KeyboardInterrupt, Interrupted):
        print("interrupted; the file in hand was restored", file=sys.stderr)
        if not outcomes:
            return 130
    print()
    print(_table(outcomes))
    return 1 if any(o.status == "survived" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())

"""The walk that does not rebuild nodes calls every callback LibCST's own visit calls, in the same
order: the context's hooks, each rule's visit_/leave_ methods, on every node and attribute.

The reference is the walk cudalint used before (`_LibcstWalk`, a CSTVisitor driven by
`module.visit`), kept here only. The rules' walk does not enter whitespace, comments and
punctuation (`visiting.INERT`, which no rule visits): the comparison leaves out the events on
and inside those nodes, from both walks."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

import libcst as cst
import pytest

from cudalint.engine.contract import PythonRule, iter_examples
from cudalint.engine.first_pass.outline import outline
from cudalint.engine.first_pass.prefilter import Prefilter
from cudalint.engine.walk import traversal, visiting
from cudalint.engine.walk.context import PythonContext, Settings
from cudalint.rules import all_rules

ROOT = Path(__file__).resolve().parents[2]
_Event = tuple[object, ...]


class _LibcstWalk(traversal._BatchedWalk, cst.CSTVisitor):
    """The reference: the rules' callbacks (the engine's own dispatch, `_BatchedWalk`) driven
    by LibCST's own (rebuilding) visit instead of `visiting.traverse`."""

    def __init__(self, ctx: PythonContext, rules: Sequence[PythonRule],
                 skip: Collection[int]) -> None:
        cst.CSTVisitor.__init__(self)
        traversal._BatchedWalk.__init__(self, ctx, rules, skip)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.ctx.enter_attribute(node, attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        self.ctx.leave_attribute(original_node, attribute)


class _LoggingContext(PythonContext):
    log: list[_Event]

    def enter(self, node: cst.CSTNode) -> None:
        self.log.append(("enter", type(node).__name__, id(node)))
        super().enter(node)

    def leave(self, node: cst.CSTNode) -> None:
        self.log.append(("leave", type(node).__name__, id(node)))
        super().leave(node)

    def enter_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.log.append(("enter_attribute", id(node), attribute, self.is_guarded()))
        super().enter_attribute(node, attribute)

    def leave_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.log.append(("leave_attribute", id(node), attribute))
        super().leave_attribute(node, attribute)


def _logged(method: Callable[..., object], code: str, name: str) -> Callable[..., object]:
    @functools.wraps(method)
    def call(self: PythonRule, node: cst.CSTNode) -> object:
        self.ctx.log.append((code, name, id(node)))  # type: ignore[attr-defined]
        return method(self, node)
    return call


def _logging(rule: type[PythonRule]) -> type[PythonRule]:
    callbacks = {name: _logged(getattr(rule, name), rule.code, name) for name in dir(rule)
                 if name.startswith(("visit_", "leave_"))}
    return type(rule.__name__, (rule,), callbacks)


_RULES = [r for r in all_rules() if issubclass(r, PythonRule)]
_LOGGING_RULES = [_logging(r) for r in _RULES]


def _run(module: cst.Module, skip: Collection[int], *, reference: bool) -> list[_Event]:
    ctx = _LoggingContext(module, Settings(), path=Path("example.py"))
    ctx.log = []
    if reference:
        walker = _LibcstWalk(ctx, [rule(ctx) for rule in _LOGGING_RULES], skip)
        module.visit(walker)
        reported = walker.reported
    else:
        reported = traversal.walk(ctx, _LOGGING_RULES, skip).places
    reports = [(r.code, id(r.node), r.message, r.severity, r.guarded) for r in ctx.reports]
    return [*ctx.log, ("reports", reports), ("reported", sorted(reported))]


def _sources() -> dict[str, str]:
    sources = {f"fixture {p.relative_to(ROOT / 'fixtures')}": p.read_text()
               for p in sorted((ROOT / "fixtures").rglob("*.py"))}
    for rule in _RULES:
        for index, example in enumerate(iter_examples(rule)):
            sources[f"{rule.__name__} example {index}"] = example.code
    guards = ROOT / "src/cudalint/engine/walk/guards.py"
    sources["cudalint engine/walk/guards.py"] = guards.read_text()
    sources["benchmark training file"] = (ROOT / "benchmarks" / "training_file.py").read_text()
    return sources


_SOURCES = _sources()


def _comparable(log: list[_Event], module: cst.Module) -> list[_Event]:
    """The events of `log` on nodes the rules' walk enters: not on an inert node, nor on an
    attribute that holds inert nodes only, nor on an attribute of a node whose attributes the
    context does not hear of (`PythonContext.ATTRIBUTES_OF`; its hooks do nothing there)."""
    nodes = {id(node): node for node in visiting.find_all(module, (cst.CSTNode,))}

    def inert(node_id: object, attribute: object) -> bool:
        node = nodes.get(node_id)  # type: ignore[call-overload]
        if node is None or type(node) not in PythonContext.ATTRIBUTES_OF:
            return True  # an attribute of an inert node, or of one the context ignores
        value = getattr(node, str(attribute))
        values = value if isinstance(value, (tuple, list)) else [value]
        return all(type(v) in visiting.INERT for v in values)

    inert_names = {kind.__name__ for kind in visiting.INERT}
    kept = []
    for event in log:
        if event[0] in ("enter", "leave") and event[1] in inert_names:
            continue
        if event[0] in ("enter_attribute", "leave_attribute") and inert(event[1], event[2]):
            continue
        kept.append(event)
    return kept


@pytest.mark.parametrize("source", _SOURCES.values(), ids=_SOURCES.keys())
def test_the_walk_calls_what_libcst_visit_calls(source: str) -> None:
    module = cst.parse_module(source)
    walked, reference = _run(module, (), reference=False), _run(module, (), reference=True)
    assert walked == _comparable(walked, module)  # no inert node was entered
    assert walked == _comparable(reference, module)
    first_pass = outline(source.encode(), module, Prefilter.for_rules(_RULES, Settings()))
    if first_pass is not None and first_pass.skip:
        skip = first_pass.skip
        assert _run(module, skip, reference=False) == \
            _comparable(_run(module, skip, reference=True), module)


def test_the_comparison_covers_rule_callbacks_and_reports() -> None:
    """The logs compared above hold events of every kind, and rules that report (a sample)."""
    examples = [source for name, source in _SOURCES.items() if " example " in name][::8]
    logs = [_run(cst.parse_module(source), (), reference=False) for source in examples]
    kinds = {str(event[0]) for log in logs for event in log}
    assert {"enter", "leave", "enter_attribute", "leave_attribute"} <= kinds
    assert len({kind for kind in kinds if kind.startswith("CUD")}) >= 10
    assert sum(1 for log in logs if log[-2][1]) >= 10


_FSTRINGS = 'a = f"{x}{y!r}{z:>{w}}{v=}"\nb = f"{q!s:^10}"\nc = f"{p}"\n'


class _Recording(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.log: list[_Event] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.log.append(("visit", id(node)))
        return not isinstance(node, cst.Lambda)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.log.append(("leave", id(original_node)))

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.log.append(("attribute", id(node), attribute))

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        self.log.append(("end", id(original_node), attribute))


@pytest.mark.parametrize("source", [
    _FSTRINGS,
    "from . import (a as b, c)\nfrom x import *\nimport y.z as w\n",
    "f = lambda x: x.cuda()\nasync def g(*a, b=1, **k) -> int:\n    return [i async for i in a]\n",
    "match x:\n    case [1, *rest] if rest: pass\n    case {'a': b, **kw}: pass\n",
])
def test_a_plain_visitor_sees_what_libcst_shows_it(source: str) -> None:
    """`visiting.visit` drives any read-only visitor as `node.visit` does, including one
    that declines to enter a node; `children` and `find_all` agree with LibCST's."""
    module = cst.parse_module(source)
    ours, libcst_s = _Recording(), _Recording()
    visiting.visit(module, ours)
    module.visit(libcst_s)
    assert ours.log == libcst_s.log
    nodes = list(visiting.find_all(module, (cst.CSTNode,)))
    assert all(visiting.children(node) == list(node.children) for node in nodes)


def test_an_f_string_without_a_format_spec_is_visited_as_libcst_does(monkeypatch) -> None:
    """LibCST skips an absent `format_spec` entirely (no attribute callbacks), unlike other
    absent attributes: whichever kind of f-string is seen first, the walk agrees."""
    for source in ('a = f"{x}"\nb = f"{y:>3}"\n', 'b = f"{y:>3}"\na = f"{x!r}"\n'):
        monkeypatch.setattr(visiting, "_SHAPES", visiting._Shapes())  # nothing learned yet
        module = cst.parse_module(source)
        ours, libcst_s = _Recording(), _Recording()
        visiting.visit(module, ours)
        module.visit(libcst_s)
        assert ours.log == libcst_s.log


def test_attribute_callbacks_can_be_asked_for_some_node_types_only() -> None:
    """With `attributes_of`, the attribute callbacks come for those node types only; every
    other callback comes as LibCST's visit calls it."""
    module = cst.parse_module(_FSTRINGS + "if a:\n    b = c if d else e\n")
    ours, libcst_s = _Recording(), _Recording()
    visiting.traverse(module, ours.on_visit, ours.on_leave, ours.on_visit_attribute,
                       ours.on_leave_attribute, attributes_of={cst.If, cst.IfExp})
    module.visit(libcst_s)
    kinds = {id(node): type(node) for node in visiting.find_all(module, (cst.CSTNode,))}
    expected = [event for event in libcst_s.log if event[0] in ("visit", "leave")
                or kinds.get(event[1]) in (cst.If, cst.IfExp)]
    assert ours.log == expected
    assert {kinds.get(e[1]) for e in ours.log if e[0] == "attribute"} == {cst.If, cst.IfExp}

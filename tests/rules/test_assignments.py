"""The assignments the rules follow: one record per walk, the same for every rule."""

from __future__ import annotations

import libcst as cst

from cudalint.engine.walk.context import PythonContext
from cudalint.engine.walk.traversal import walk
from cudalint.rules.assignments import TracksAssignments

SOURCE = """\
device = "cuda"
kw = {}
kw["device_ids"] = [0]

def train(model):
    device = "cpu"
    model.to(device)

class Trainer:
    device = "mps"

    def step(self, x):
        x.to(device)

x = 1
x += 2
"""


def _seen(tag: str) -> type[TracksAssignments]:
    """A rule noting, at each `.to(...)` call, what its argument resolves to."""

    class Seen(TracksAssignments):
        code = f"X{tag}"
        notes: list[tuple[str, str]] = []

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "to":
                value, _ = self.resolve(node.args[0].value)
                type(self).notes.append((tag, self.ctx.module.code_for_node(value)))

        def leave_Module(self, node: cst.Module) -> None:
            items = self.items(cst.Name("kw"))
            type(self).notes.append((tag, ",".join(i.key for i in items)))
            type(self).notes.append((tag, repr(self.binding(cst.Name("x")))))

    return Seen


def test_every_rule_sees_the_same_bindings_from_one_record() -> None:
    first, second = _seen("a"), _seen("b")
    ctx = PythonContext(cst.parse_module(SOURCE))
    walk(ctx, [first, second])
    assert [n for _, n in first.notes] == ['"cpu"', '"cuda"', "device_ids", "None"]
    assert [n for _, n in second.notes] == [n for _, n in first.notes]


def test_a_second_walk_of_the_same_module_starts_a_new_record() -> None:
    rule = _seen("c")
    ctx = PythonContext(cst.parse_module(SOURCE))
    walk(ctx, [rule])
    once = list(rule.notes)
    walk(ctx, [rule])
    assert rule.notes == once + once

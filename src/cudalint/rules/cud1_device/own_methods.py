"""Calls on `self` in a class: whether `self.cuda()` calls the class's own `cuda` (a TensorRT
engine wrapper that is no `nn.Module`), and whether a fix writing `self.<method>(...)` would
make the method it stands in call itself (`self.cuda()` inside `def to(self)` rewritten to
`self.to(...)`: infinite recursion on CUDA)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from cudalint.engine.walk.context import dotted_name

if TYPE_CHECKING:
    from cudalint.engine.walk.context import PythonContext


def enclosing_method(ctx: PythonContext) -> tuple[cst.ClassDef, cst.FunctionDef] | None:
    """The class and the method (of its body) around the node being visited, through any
    nested function (a closure reads the method's `self`)."""
    stack = ctx.stack
    for index in range(len(stack) - 1, 1, -1):
        node = stack[index]
        if type(node) is cst.FunctionDef and type(stack[index - 1]) is cst.IndentedBlock \
                and type(stack[index - 2]) is cst.ClassDef:
            return stack[index - 2], node  # type: ignore[return-value]
    return None


def is_self(method: cst.FunctionDef, expr: cst.BaseExpression) -> bool:
    """`expr` is the method's first parameter (`self`), in a method that is no staticmethod."""
    params = method.params.params
    if not params or not isinstance(expr, cst.Name) or params[0].name.value != expr.value:
        return False
    return not any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
                   for d in method.decorators)


def defines(cls: cst.ClassDef, name: str) -> bool:
    """The class's body defines a method `name`."""
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return any(type(s) is cst.FunctionDef and s.name.value == name for s in body)  # type: ignore[attr-defined]


def is_module_class(cls: cst.ClassDef) -> bool:
    """A base of the class is a module (`nn.Module`, `torch.nn.Module`, `pl.LightningModule`):
    its own `cuda` overrides the module's and still moves it."""
    return any(dotted_name(base.value).rpartition(".")[2].endswith("Module")
               for base in cls.bases)


def calls_own_cuda(ctx: PythonContext, receiver: cst.BaseExpression) -> bool:
    """`self.cuda()` in a class that is no module and defines its own `cuda`: the project's
    method, not torch's."""
    found = enclosing_method(ctx)
    if found is None:
        return False
    cls, method = found
    return is_self(method, receiver) and defines(cls, "cuda") and not is_module_class(cls)


def calls_itself(ctx: PythonContext, receiver: cst.BaseExpression, name: str) -> bool:
    """Whether `receiver.<name>(...)`, written where the visited node is, would call the
    method it stands in: `self.to(...)` inside `def to(self, ...)`."""
    found = enclosing_method(ctx)
    if found is None:
        return False
    _, method = found
    return method.name.value == name and is_self(method, receiver)

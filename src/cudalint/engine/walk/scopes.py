"""Every value assigned to each name in a scope (a function, a class's methods, a module),
from the whole scope: the guards need it for `has_gpu = torch.cuda.is_available()`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import libcst as cst

# A value that cannot be known (`x += 1`): never an availability check.
UNKNOWN = cst.Name("__unknown__")


def assignments(scope: cst.CSTNode) -> dict[str, list[cst.BaseExpression]]:
    """Target (`name`, `self.attr`) -> the values assigned to it in `scope`, not counting
    nested functions and classes (except a class's own methods, for `self.attr`)."""
    found: dict[str, list[cst.BaseExpression]] = defaultdict(list)
    _collect(scope, found, methods=isinstance(scope, cst.ClassDef))
    return dict(found)


def named_anywhere(scope: cst.CSTNode) -> dict[str, list[cst.BaseExpression]]:
    """Name -> the values of the `name = ...` statements anywhere in `scope`, nested functions
    and classes included (no annotated, augmented or unpacking assignment), in source order.
    Only statements are visited: no expression holds a statement."""
    found: dict[str, list[cst.BaseExpression]] = defaultdict(list)
    _named(scope, found)
    return dict(found)


def _named(node: cst.CSTNode, found: dict[str, list[cst.BaseExpression]]) -> None:
    for statement in _statements(node):
        kind = type(statement)
        if kind is not cst.SimpleStatementLine and kind is not cst.SimpleStatementSuite:
            for part in _parts(statement):
                _named(part, found)
            continue
        for small in statement.body:  # type: ignore[attr-defined]
            if type(small) is cst.Assign:
                for target in small.targets:
                    if type(target.target) is cst.Name:
                        found[target.target.value].append(small.value)


def target_key(target: cst.BaseExpression) -> str | None:
    """`name` or `self.attr` (an attribute of a plain name), else None."""
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
        return f"{target.value.value}.{target.attr.value}"
    return None


def _collect(node: cst.CSTNode, found: dict[str, list[cst.BaseExpression]],
             *, methods: bool) -> None:
    for statement in _statements(node):
        kind = type(statement)
        if kind is cst.SimpleStatementLine or kind is cst.SimpleStatementSuite:
            for small in statement.body:  # type: ignore[attr-defined]
                _record_small(found, small)
        elif kind is cst.FunctionDef:
            if methods:
                _collect(statement, found, methods=False)
        elif kind is not cst.ClassDef:
            for part in _parts(statement):
                _collect(part, found, methods=methods)


def _statements(node: cst.CSTNode) -> Sequence[cst.CSTNode]:
    """The statements directly in a module, a compound statement's block, or a suite."""
    if isinstance(node, cst.SimpleStatementSuite):
        return [node]
    body = getattr(node, "body", ())
    if isinstance(body, cst.SimpleStatementSuite):
        return [body]
    if isinstance(body, cst.IndentedBlock):
        return body.body
    return body if isinstance(body, Sequence) else [body]


def _parts(statement: cst.CSTNode) -> list[cst.CSTNode]:
    """The blocks of a compound statement: its body, else/elif, handlers, finally, cases."""
    parts: list[cst.CSTNode] = [statement]
    for name in ("orelse", "finalbody"):
        part = getattr(statement, name, None)
        if isinstance(part, cst.If):
            parts.extend(_parts(part))  # elif
        elif part is not None:
            parts.append(part)
    parts.extend(getattr(statement, "handlers", ()))
    parts.extend(getattr(statement, "cases", ()))
    return parts


def _record_small(found: dict[str, list[cst.BaseExpression]],
                  small: cst.BaseSmallStatement) -> None:
    if isinstance(small, cst.Assign):
        for target in small.targets:
            _record(found, target.target, small.value)
    elif isinstance(small, cst.AnnAssign):
        _record(found, small.target, small.value or UNKNOWN)
    elif isinstance(small, cst.AugAssign):
        _record(found, small.target, UNKNOWN)


def _record(found: dict[str, list[cst.BaseExpression]], target: cst.BaseExpression,
            value: cst.BaseExpression) -> None:
    key = target_key(target)
    if key is not None:
        found[key].append(value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _record(found, element.value, UNKNOWN)

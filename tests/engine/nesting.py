"""How deep LibCST nests a module, walked in full: `ast`'s depth, where a boolean chain of n
operands is n - 1 operations one in the other, the `for`s of a comprehension one in the other,
and a string of n literals (`"a" f"{b}"`) n - 1 concatenations: the reference the depth gate
(cudalint.engine.reading.depth) is held to."""

from __future__ import annotations

import ast
import io
import tokenize


def libcst_depth(tree: ast.AST, source: bytes) -> int:
    lines = source.removeprefix(b"\xef\xbb\xbf").splitlines(keepends=True)
    deepest = 0
    stack: list[tuple[ast.AST, int, bool]] = [(tree, 1, False)]
    while stack:
        node, depth, part = stack.pop()
        if isinstance(node, ast.BoolOp):
            depth += len(node.values) - 2
        deepest = max(deepest, depth)
        if not part and (isinstance(node, ast.JoinedStr) or (
                isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)))):
            deepest = max(deepest, depth + _literals(_segment(lines, node)) - 1)
        for name, value in ast.iter_fields(node):
            children = [child for child in (value if isinstance(value, list) else [value])
                        if isinstance(child, ast.AST)]
            for index, child in enumerate(children):
                # an f-string's literal parts and format specs stand where it stands (3.11)
                is_part = (isinstance(node, ast.JoinedStr) and isinstance(child, ast.Constant)) \
                    or name == "format_spec"
                stack.append((child, depth + 1 + (index if name == "generators" else 0),
                              is_part))
    return deepest


def _segment(lines: list[bytes], node: ast.expr) -> bytes:
    assert node.end_lineno is not None and node.end_col_offset is not None
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first][node.col_offset:node.end_col_offset]
    return lines[first][node.col_offset:] + b"".join(lines[first + 1:last]) \
        + lines[last][:node.end_col_offset]


def _literals(segment: bytes) -> int:
    """The string literals that make one string's text, its f-strings' fields left out."""
    if segment.count(b"'") + segment.count(b'"') < 4:  # one literal at most
        return 1
    tokens = tokenize.tokenize(io.BytesIO(b"(" + segment + b"\n)\n").readline)
    count, inside = 0, 0
    for token in tokens:
        name = tokenize.tok_name[token.type]
        if name in ("FSTRING_END", "TSTRING_END"):
            inside -= 1
        elif name in ("FSTRING_START", "TSTRING_START"):
            count, inside = count + (not inside), inside + 1
        elif token.type == tokenize.STRING:
            count += not inside
    return count

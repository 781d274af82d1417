"""YAML read as PyYAML's node tree (`compose`), which keeps the line and column of every value.

Only the shape is read: no tags are constructed, so nothing in the file runs.
"""

from __future__ import annotations

from functools import lru_cache

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from cudalint.finding import Finding, error_finding
from cudalint.formats import FormatError
from cudalint.formats.shell import Segment
from cudalint.kinds import SourceFile

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=16)
def documents(text: str) -> tuple[Node, ...] | FormatError:
    """The file's documents (a compose file may hold several), or why it could not be read."""
    try:
        return tuple(node for node in yaml.compose_all(text, Loader=_Loader) if node is not None)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        if mark is None:
            return FormatError(f"invalid YAML: {problem}")
        return FormatError(f"invalid YAML: {problem}", mark.line + 1, mark.column + 1)
    except RecursionError:
        return FormatError("invalid YAML: nested too deeply")


def read(source: SourceFile) -> tuple[Node, ...] | Finding:
    """A YAML file's documents, or the error line saying why it is not YAML."""
    parsed = documents(source.text or "")
    if isinstance(parsed, FormatError):
        return error_finding(source.path, parsed.message, parsed.row, parsed.column)
    return parsed


def compose_services(source: SourceFile) -> list[Node] | Finding:
    """The service mappings of every document of a compose file, or the file's error."""
    parsed = read(source)
    if isinstance(parsed, Finding):
        return parsed
    return [service for document in parsed for _, service in items(get(document, "services"))]


def where(node: Node) -> tuple[int, int]:
    """The 1-based row and column where a node starts."""
    return node.start_mark.line + 1, node.start_mark.column + 1


def items(node: Node | None) -> list[tuple[Node, Node]]:
    return list(node.value) if isinstance(node, MappingNode) else []


def get(node: Node | None, key: str) -> Node | None:
    """The value under a plain string key of a mapping."""
    for key_node, value in items(node):
        if isinstance(key_node, ScalarNode) and key_node.value == key:
            return value
    return None


def entries(node: Node | None) -> list[Node]:
    """A sequence's items; a lone scalar counts as a sequence of one."""
    if isinstance(node, SequenceNode):
        return list(node.value)
    return [node] if isinstance(node, ScalarNode) else []


def scalar(node: Node | None) -> str | None:
    return node.value if isinstance(node, ScalarNode) else None


def value_start(node: Node) -> tuple[int, int]:
    """Where a node's text starts: past the opening quote of a quoted scalar."""
    row, column = where(node)
    quoted = isinstance(node, ScalarNode) and node.style in ('"', "'")
    return (row, column + 1) if quoted else (row, column)


def script_segments(node: Node, lines: list[str]) -> list[Segment]:
    """A scalar holding a script (a CI `run:`), as the lines written in the file.

    Block scalars are read from the file itself, so every row and column is exact; a folded
    (`>`) block's lines continue one another, as the folding makes one line of them."""
    if not isinstance(node, ScalarNode):
        return []
    if node.style not in ("|", ">"):
        row, column = value_start(node)
        return [Segment(row + i, column if i == 0 else 1, text)
                for i, text in enumerate(node.value.split("\n"))]
    first = node.start_mark.line + 1
    last = node.end_mark.line if node.end_mark.column > 0 else node.end_mark.line - 1
    body = [(row, lines[row]) for row in range(first, min(last + 1, len(lines)))]
    indents = [len(text) - len(text.lstrip(" ")) for _, text in body if text.strip()]
    indent = min(indents, default=0)
    segments = []
    for index, (row, text) in enumerate(body):
        content = text[indent:]
        following = body[index + 1][1].strip() if index + 1 < len(body) else ""
        if node.style == ">" and content.strip() and following:
            content += " \\"  # folded into the next line
        segments.append(Segment(row + 1, indent + 1, content))
    return segments

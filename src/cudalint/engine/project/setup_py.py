"""What a project's setup.py declares, read with LibCST and never executed: the modules its
`CUDAExtension(...)` calls build, and the names of its own packages."""

from __future__ import annotations

import re

import libcst as cst

from cudalint.engine.reading import depth
from cudalint.engine.settings import SetupFacts
from cudalint.engine.walk import visiting
from cudalint.engine.walk.visiting import find_all

# The fallback for a setup.py LibCST cannot parse (Python 2 prints, ...).
_EXTENSION = re.compile(r"CUDAExtension\(\s*(?:name\s*=\s*)?['\"]([\w.]+)['\"]")
_CUDA_SOURCE = (".cu", ".cuh")


def read_setup(text: str) -> SetupFacts:
    try:
        module = depth.parse_module(text)
    except (cst.ParserSyntaxError, SyntaxError, ValueError, RecursionError):  # or too deep
        return SetupFacts(cuda_extensions=frozenset(_EXTENSION.findall(text)))
    reader = _SetupReader()
    visiting.visit(module, reader)
    return SetupFacts(reader.cuda_only(), frozenset(reader.packages), tuple(reader.requires))


class _SetupReader(cst.CSTVisitor):
    """Collects constants, extension constructors and calls; `cuda_only()` resolves them once
    the whole file is read, so a choice made after a call still counts."""

    def __init__(self) -> None:
        super().__init__()
        self.constants: dict[str, str] = {}
        # local name -> the kinds of extension ("cuda", "cpu") it may build
        self.kinds: dict[str, set[str]] = {"CUDAExtension": {"cuda"}, "CppExtension": {"cpu"}}
        self.aliases: dict[str, str] = {}  # `import CUDAExtension as CE`: CE -> CUDAExtension
        self.calls: list[cst.Call] = []
        self.packages: set[str] = set()
        self.requires: list[str] = []
        self.lists: dict[str, cst.List | cst.Tuple] = {}

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        imported = _last_name(node.name)
        local = _last_name(node.asname.name) if node.asname is not None else None
        if imported in self.kinds and local:
            self.aliases[local] = imported

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if not isinstance(target.target, cst.Name):
                continue
            name = target.target.value
            if isinstance(node.value, (cst.List, cst.Tuple)):
                self.lists[name] = node.value
            value = self.string(node.value)
            if value is not None:
                self.constants[name] = value
                continue
            # `Extension = CUDAExtension if WITH_CUDA else CppExtension`, or assigned twice
            chosen = set().union(*(self._kinds_of(n) for n in _names_in(node.value)))
            if chosen:
                self.kinds.setdefault(name, set()).update(chosen)

    def visit_Call(self, node: cst.Call) -> None:
        if _last_name(node.func) == "setup":
            self._read_setup_call(node)
        else:
            self.calls.append(node)

    def cuda_only(self) -> frozenset[str]:
        """Modules built only by CUDA extensions: no CPU build of the same module exists."""
        built: dict[str, set[str]] = {}
        for call in self.calls:
            kinds = self._kinds_of(_last_name(call.func))
            if not kinds and (_last_name(call.func) or "").endswith("Extension"):
                kinds = {"cpu"}
            if "cpu" in kinds and _has_cu(call):
                kinds = (kinds - {"cpu"}) | {"cuda"}
            name = self.string(_argument(call, 0, "name")) if kinds else None
            if name:
                built.setdefault(name, set()).update(kinds)
        return frozenset(name for name, kinds in built.items() if kinds == {"cuda"})

    def _kinds_of(self, name: str | None) -> set[str]:
        if name is None:
            return set()
        return self.kinds.get(self.aliases.get(name, name), set())

    def _read_setup_call(self, node: cst.Call) -> None:
        name = self.string(_argument(node, -1, "name"))
        if name:
            self.packages.add(re.sub(r"[-.]+", "_", name).lower())
        self._read_requires(_argument(node, -1, "install_requires"))
        extras = _argument(node, -1, "extras_require")
        if isinstance(extras, cst.Dict):
            for entry in extras.elements:
                self._read_requires(entry.value)
        for keyword in ("packages", "py_modules"):
            listed = _argument(node, -1, keyword)
            if isinstance(listed, (cst.List, cst.Tuple)):
                for element in listed.elements:
                    value = self.string(element.value)
                    if value:
                        self.packages.add(value.split(".", 1)[0])

    def _read_requires(self, listed: cst.BaseExpression | None) -> None:
        if isinstance(listed, cst.Name):  # `install_requires=REQUIREMENTS`
            listed = self.lists.get(listed.value)
        if isinstance(listed, (cst.List, cst.Tuple)):
            self.requires.extend(v for e in listed.elements if (v := self.string(e.value)))

    def string(self, expr: cst.BaseExpression | None) -> str | None:
        """The value of a string expression built from literals and string constants."""
        if isinstance(expr, cst.SimpleString):
            value = expr.evaluated_value
            return value if isinstance(value, str) else None
        if isinstance(expr, cst.Name):
            return self.constants.get(expr.value)
        if isinstance(expr, cst.ConcatenatedString):
            return self._joined([expr.left, expr.right])
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            return self._joined([expr.left, expr.right])
        if isinstance(expr, cst.FormattedString):
            return self._formatted(expr)
        return None

    def _joined(self, parts: list[cst.BaseExpression]) -> str | None:
        values = [self.string(p) for p in parts]
        return None if any(v is None for v in values) else "".join(v or "" for v in values)

    def _formatted(self, expr: cst.FormattedString) -> str | None:
        pieces: list[str] = []
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                pieces.append(part.value)
                continue
            value = None
            if isinstance(part, cst.FormattedStringExpression) and part.format_spec is None:
                value = self.string(part.expression)
            if value is None:
                return None
            pieces.append(value)
        return "".join(pieces)


def _last_name(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    """The argument passed by `keyword`, or at `position` (-1: keyword only)."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    if 0 <= position < len(positional):
        return positional[position].value
    return None


def _names_in(expr: cst.BaseExpression) -> list[str]:
    names = []
    for node in find_all(expr, (cst.Name, cst.Attribute)):
        name = _last_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
        if name:
            names.append(name)
    return names


def _has_cu(call: cst.Call) -> bool:
    """A literal `.cu` source among the call's arguments (`sources=["k.cu"]`, globs too)."""
    for string in find_all(call, (cst.SimpleString,)):
        value = string.evaluated_value if isinstance(string, cst.SimpleString) else None
        if isinstance(value, str) and value.endswith(_CUDA_SOURCE):
            return True
    return False

"""The code a target can reach: the lines of its own function, of the functions and classes it
names (in its file and in the project modules it imports from), of those they name in turn,
and the module-level code of each file it reaches (which ran when it was imported).

A static finding outside these lines is in code this run cannot reach (another function of the
same file): it is not this run's hazard. Read with `ast`, without importing anything; names
reached through a variable, `getattr` or a registry are not followed, and a class counts whole.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cudalint.files import ReadError, read_text

if TYPE_CHECKING:
    from cudalint.runtime.smoke.static import StaticFinding
    from cudalint.runtime.smoke.target import TargetSpec

_MAX_SIZE = 4 * 1024 * 1024
_Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass
class _Module:
    path: Path
    tree: ast.Module
    defs: dict[str, _Scope] = field(default_factory=dict)
    # local name -> (module, the name imported from it; None for `import module`)
    imported: dict[str, tuple[str, str | None]] = field(default_factory=dict)


def within_reach(findings: list[StaticFinding], files: dict[str, Path],
                 spec: TargetSpec) -> tuple[list[StaticFinding], list[StaticFinding]]:
    """The findings in code the target can reach, and the others. All are in reach when the
    target's function cannot be read (nothing is dropped on a guess)."""
    target_file = _target_file(files, spec)
    lines = reachable_lines(files, target_file, spec.function) if target_file else None
    if lines is None:
        return findings, []
    reached: list[StaticFinding] = []
    elsewhere: list[StaticFinding] = []
    for finding in findings:
        name, _, row = finding.where.rpartition(":")
        inside = row.isdigit() and int(row) in lines.get(name, set())
        (reached if inside or name not in files else elsewhere).append(finding)
    return reached, elsewhere


def _target_file(files: dict[str, Path], spec: TargetSpec) -> str | None:
    if spec.is_file:
        wanted = Path(spec.location).resolve()
        return next((name for name, path in files.items() if path.resolve() == wanted), None)
    return next((name for name in files if _dotted(name) == spec.location
                 or _dotted(name).endswith("." + spec.location)), None)


def reachable_lines(files: dict[str, Path], target_file: str,
                    function: str) -> dict[str, set[int]] | None:
    """`files`: the run's project files by their path from the root (posix); `target_file` one
    of them. The lines of each file the target can reach, or None when the target's function
    cannot be found (then nothing is filtered)."""
    modules = {name: module for name, path in files.items() if name.endswith(".py")
               and (module := _parse(path, name)) is not None}
    start = modules.get(target_file)
    if start is None:
        return None
    node = _find(start, function)
    if node is None:
        return None
    lines: dict[str, set[int]] = {}
    by_module = _by_module(modules)
    queue: list[tuple[str, ast.AST]] = [(target_file, node)]
    seen: set[tuple[str, int]] = set()
    for name in _imports_closure(target_file, modules, by_module):
        queue += [(name, statement) for statement in modules[name].tree.body
                  if not isinstance(statement, _Scope)]
    while queue:
        name, scope = queue.pop()
        key = (name, id(scope))
        if key in seen:
            continue
        seen.add(key)
        module = modules[name]
        first = min([getattr(scope, "lineno", 1),
                     *(d.lineno for d in getattr(scope, "decorator_list", ()))])
        last = getattr(scope, "end_lineno", None) or first
        lines.setdefault(name, set()).update(range(first, last + 1))
        for used in _names(scope):
            queue += _resolve(used, module, name, modules, by_module)
    return lines


def _resolve(used: tuple[str, ...], module: _Module, name: str, modules: dict[str, _Module],
             by_module: dict[str, str]) -> list[tuple[str, ast.AST]]:
    head = used[0]
    if head in module.defs:
        return [(name, module.defs[head])]
    if head not in module.imported:
        return []
    source, imported = module.imported[head]
    if imported is not None:  # from source import imported
        other = by_module.get(source)
        if other is not None and imported in modules[other].defs:
            return [(other, modules[other].defs[imported])]
        submodule = by_module.get(f"{source}.{imported}")
        if submodule is not None and len(used) > 1 and used[1] in modules[submodule].defs:
            return [(submodule, modules[submodule].defs[used[1]])]
        return []
    dotted = source  # import source (as head): used = (head, attr, ...)
    for part in used[1:]:
        other = by_module.get(dotted)
        if other is not None and part in modules[other].defs:
            return [(other, modules[other].defs[part])]
        dotted = f"{dotted}.{part}"
    return []


def _imports_closure(start: str, modules: dict[str, _Module],
                     by_module: dict[str, str]) -> list[str]:
    """The target's file and the project files it imports, directly or not."""
    found, queue = [start], [start]
    while queue:
        module = modules[queue.pop()]
        for source, imported in module.imported.values():
            for candidate in (source, f"{source}.{imported}" if imported else None):
                other = by_module.get(candidate) if candidate else None
                if other is not None and other not in found:
                    found.append(other)
                    queue.append(other)
    return found


def _names(scope: ast.AST) -> set[tuple[str, ...]]:
    """Every name the scope reads, with the attributes read off it: `model.build` -> ("model",
    "build")."""
    found: set[tuple[str, ...]] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Attribute):
            chain: list[str] = []
            current: ast.AST = node
            while isinstance(current, ast.Attribute):
                chain.append(current.attr)
                current = current.value
            if isinstance(current, ast.Name):
                found.add((current.id, *reversed(chain)))
        elif isinstance(node, ast.Name):
            found.add((node.id,))
    return found


def _find(module: _Module, function: str) -> _Scope | None:
    parts = function.split(".")
    node = module.defs.get(parts[0])
    for part in parts[1:]:
        if not isinstance(node, ast.ClassDef):
            return None
        node = next((child for child in node.body if isinstance(child, _Scope)
                     and child.name == part), None)
    return node


def _by_module(modules: dict[str, _Module]) -> dict[str, str]:
    """Each file by every name it can be imported as: its dotted path from the root and each
    shorter tail of it (`from model import Net` where the target's folder is on sys.path); the
    longer the path, the later it comes, so a file nearer the root wins a shared name."""
    found: dict[str, str] = {}
    for name in sorted(modules, key=lambda item: (item.count("/"), item)):
        parts = _dotted(name).split(".")
        for start in range(len(parts)):
            found.setdefault(".".join(parts[start:]), name)
    return found


def _parse(path: Path, relative: str) -> _Module | None:
    try:
        tree = ast.parse(read_text(path, _MAX_SIZE) or "", filename=str(path))
    except (ReadError, OSError, SyntaxError, ValueError, RecursionError):
        return None
    module = _Module(path, tree)
    dotted = _dotted(relative).split(".")
    package = dotted if relative.endswith("__init__.py") else dotted[:-1]
    for statement in ast.walk(tree):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                local = alias.asname or alias.name.partition(".")[0]
                source = alias.name if alias.asname else alias.name.partition(".")[0]
                module.imported[local] = (source, None)
        elif isinstance(statement, ast.ImportFrom):
            source = statement.module or ""
            if statement.level:
                base = package[:len(package) - statement.level + 1]
                source = ".".join([*base, *([source] if source else [])])
            for alias in statement.names:
                module.imported[alias.asname or alias.name] = (source, alias.name)
    for statement in tree.body:
        if isinstance(statement, _Scope):
            module.defs[statement.name] = statement
    return module


def _dotted(relative: str) -> str:
    """`pkg/model.py` -> `pkg.model`; `pkg/__init__.py` -> `pkg`."""
    parts = relative.removesuffix(".py").split("/")
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)

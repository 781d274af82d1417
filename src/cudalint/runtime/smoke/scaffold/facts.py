"""What a reading of the project's Python files (`ast`, never importing them) knows about its
training: the nn.Module subclasses and their constructors, the layer `forward` applies first,
the optimizer and loss it builds, its checkpoint calls, the numbers its configuration files and
argument parsers give, and the files that train when they are imported."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cudalint.files import ReadError, read_regular

_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "build", "dist", "site-packages",
                           "venv", "env"})
_MAX_FILES = 2000
_MAX_BYTES = 1_000_000
_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module",
                           "pytorch_lightning.LightningModule", "lightning.LightningModule",
                           "lightning.pytorch.LightningModule"})
_CHECKPOINT_CALLS = frozenset({"torch.save", "torch.load", "safetensors.torch.save_file",
                               "safetensors.torch.load_file", "load_state_dict"})
# A number in a configuration file: `width: 64`, `"width": 64,`, `width = 64`.
_CONFIG_LINE = re.compile(r'^\s*"?([A-Za-z_]\w*)"?\s*[:=]\s*'
                          r"(-?\d[\d_]*(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*,?\s*(?:#.*)?$")
_CONFIG_SUFFIXES = frozenset({".yaml", ".yml", ".json", ".toml", ".cfg", ".ini"})


@dataclass(frozen=True)
class Site:
    """Where something is: a file relative to the project's root, a line, its code."""

    file: str
    line: int
    code: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Param:
    name: str
    default: str | None  # the default's source; None when the argument is required
    annotation: str | None


@dataclass(frozen=True)
class Layer:
    """A layer built in `__init__` (`nn.Linear(in_features, width)`): its class, its arguments'
    sources, where."""

    kind: str  # qualified when imported from torch: "torch.nn.Linear"
    args: tuple[str, ...]
    keywords: dict[str, str]
    site: Site


@dataclass
class ModelClass:
    name: str
    path: Path
    site: Site
    params: list[Param]
    forward: list[str]  # forward's parameters after self
    first_layer: Layer | None  # what forward applies to its first argument
    uses: set[str]  # the names its body reads
    node: ast.ClassDef
    # How the loss is read from what forward returns when it takes the targets too
    # (`return logits, loss` -> "[1]"; `return {"loss": ...}` -> "['loss']"), with that line.
    loss_output: tuple[str, Site] | None = None

    @property
    def in_tests(self) -> bool:
        return in_tests(self.site.file)


def in_tests(file: str) -> bool:
    """Whether a file (relative to the root) belongs to the tests."""
    parts = file.split("/")
    return any(part in ("test", "tests") for part in parts) or parts[-1].startswith("test_")


@dataclass(frozen=True)
class Call:
    """An optimizer, loss or checkpoint call: what it calls and its literal keywords."""

    qualname: str
    site: Site
    keywords: dict[str, str]  # the literal ones
    sources: dict[str, str] = field(default_factory=dict)  # every keyword's source
    args: tuple[str, ...] = ()  # the positional arguments' sources (a loss's: output, target)


@dataclass
class ProjectFacts:
    root: Path
    models: list[ModelClass] = field(default_factory=list)
    optimizers: list[Call] = field(default_factory=list)
    losses: list[Call] = field(default_factory=list)
    # calls of a loss module the project built (`criterion(model(x), y)`): the class, its
    # literal keywords, and the call's arguments
    loss_uses: list[Call] = field(default_factory=list)
    checkpoints: list[Call] = field(default_factory=list)
    # literal arguments where a class is constructed: name -> [(positional, keywords, site)]
    constructions: dict[str, list[tuple[list[str], dict[str, str], Site]]] = field(
        default_factory=dict)
    config: dict[str, tuple[str, Site]] = field(default_factory=dict)  # key -> (number, where)
    trains_at_import: set[Path] = field(default_factory=set)
    modules: dict[Path, ast.Module] = field(default_factory=dict)
    sources: dict[Path, str] = field(default_factory=dict)


def read_project(root: Path, skip: Path | None = None) -> ProjectFacts:
    """The facts of every Python file under `root` (but `skip`), in path order."""
    facts = ProjectFacts(root)
    for path in _files(root, skip):
        if path.suffix in _CONFIG_SUFFIXES and path.name != "pyproject.toml":
            _read_config(path, facts)
            continue
        try:
            source = _text(path)
            module = ast.parse(source, filename=str(path))
        except (ReadError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        facts.modules[path] = module
        facts.sources[path] = source
    classes = _module_classes(facts)
    for path, module in facts.modules.items():
        _Reader(facts, path, classes).visit(module)
        if _trains_at_import(module, classes):
            facts.trains_at_import.add(path)
    return facts


def _files(root: Path, skip: Path | None) -> Iterator[Path]:
    count = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS
                         and not (Path(folder) / d / "pyvenv.cfg").exists())
        for name in sorted(names):
            path = Path(folder) / name
            if path.suffix not in _CONFIG_SUFFIXES | {".py"} or path == skip:
                continue
            count += 1
            if count > _MAX_FILES:
                return
            yield path


def _text(path: Path) -> str:
    """A file's UTF-8 text, read as `check` reads (regular files of at most _MAX_BYTES: a FIFO
    or a device named like a source is never opened); ReadError or UnicodeDecodeError else."""
    return read_regular(path, _MAX_BYTES).decode("utf-8")


def _read_config(path: Path, facts: ProjectFacts) -> None:
    try:
        lines = _text(path).splitlines()
    except (ReadError, UnicodeDecodeError):
        return
    for number, line in enumerate(lines, 1):
        match = _CONFIG_LINE.match(line)
        if match:
            site = Site(_relative(path, facts.root), number, line.strip())
            facts.config.setdefault(match.group(1), (match.group(2).replace("_", ""), site))


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def aliases(module: ast.Module) -> dict[str, str]:
    """Local names bound by the module's top-level imports, to what they name."""
    found: dict[str, str] = {}
    for node in module.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    found[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def qualname(expr: ast.expr, names: dict[str, str]) -> str | None:
    """`nn.Linear` -> "torch.nn.Linear" through the imports; a local name stays as it is."""
    if isinstance(expr, ast.Name):
        return names.get(expr.id, expr.id)
    if isinstance(expr, ast.Attribute):
        base = qualname(expr.value, names)
        return f"{base}.{expr.attr}" if base else None
    return None


def _module_classes(facts: ProjectFacts) -> set[str]:
    """The names of the project's nn.Module subclasses, through its own base classes."""
    bases: dict[str, list[str]] = {}
    for module in facts.modules.values():
        names = aliases(module)
        for node in ast.walk(module):
            if isinstance(node, ast.ClassDef):
                bases.setdefault(node.name, []).extend(
                    filter(None, (qualname(base, names) for base in node.bases)))
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, parents in bases.items():
            if name not in found and any(p in _MODULE_BASES or p.rsplit(".", 1)[-1] in found
                                         for p in parents):
                found.add(name)
                changed = True
    return found


class _Reader(ast.NodeVisitor):
    def __init__(self, facts: ProjectFacts, path: Path, classes: set[str]) -> None:
        self.facts, self.path, self.classes = facts, path, classes
        self.names = aliases(facts.modules[path])
        self.source = facts.sources[path]
        self.loss_modules: dict[str, Call] = {}  # a name bound to a built loss -> its build

    def site(self, node: ast.AST) -> Site:
        line = getattr(node, "lineno", 1)
        text = self.source.splitlines()[line - 1].strip() if self.source else ""
        return Site(_relative(self.path, self.facts.root), line, text[:100])

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.name in self.classes:
            self.facts.models.append(self._model(node))
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        # `HIDDEN = 128` at the top of a script: a value for a `hidden` argument.
        if (isinstance(node.value, ast.Constant) and isinstance(node.value.value, (int, float))
                and not isinstance(node.value.value, bool) and node.col_offset == 0):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.facts.config.setdefault(target.id.lower(), (repr(node.value.value),
                                                                     self.site(node)))
        # `criterion = nn.CrossEntropyLoss()` or `self.loss_fn = ...`: its calls are the loss.
        if isinstance(node.value, ast.Call) and len(node.targets) == 1:
            name = qualname(node.value.func, self.names) or ""
            bound = _bound_name(node.targets[0])
            if bound and _is_loss(name) and name.rsplit(".", 1)[-1][:1].isupper():
                self.loss_modules[bound] = Call(name, self.site(node),
                                                _literal_keywords(node.value))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = qualname(node.func, self.names) or ""
        short = name.rsplit(".", 1)[-1]
        keywords = _literal_keywords(node)
        sources = {k.arg: ast.unparse(k.value) for k in node.keywords if k.arg}
        if name.startswith("torch.optim.") and short[:1].isupper() and "lr_scheduler" not in name:
            self.facts.optimizers.append(Call(name, self.site(node), keywords, sources))
        elif _is_loss(name):
            self.facts.losses.append(Call(name, self.site(node), keywords, sources,
                                          tuple(ast.unparse(arg) for arg in node.args)))
        elif (built := self.loss_modules.get(_bound_name(node.func) or "")) and len(node.args) > 1:
            self.facts.loss_uses.append(Call(built.qualname, self.site(node), built.keywords, {},
                                             tuple(ast.unparse(arg) for arg in node.args)))
        elif name in _CHECKPOINT_CALLS or short in ("save_checkpoint", "load_checkpoint"):
            self.facts.checkpoints.append(Call(name, self.site(node), keywords))
        elif short == "add_argument":
            self._argument_default(node)
        if short in self.classes:
            positional = [ast.unparse(arg) for arg in node.args]
            self.facts.constructions.setdefault(short, []).append(
                (positional, {k.arg: ast.unparse(k.value) for k in node.keywords if k.arg},
                 self.site(node)))
        self.generic_visit(node)

    def _argument_default(self, node: ast.Call) -> None:
        flags = [arg.value for arg in node.args
                 if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        default = next((k.value for k in node.keywords if k.arg == "default"), None)
        if (flags and flags[-1].startswith("--") and isinstance(default, ast.Constant)
                and isinstance(default.value, (int, float)) and not isinstance(default.value,
                                                                                bool)):
            key = flags[-1].lstrip("-").replace("-", "_")
            self.facts.config.setdefault(key, (repr(default.value), self.site(node)))

    def _model(self, node: ast.ClassDef) -> ModelClass:
        methods = {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}
        init, forward = methods.get("__init__"), methods.get("forward")
        params = _params(init) if init else []
        forward_params = [arg.arg for arg in forward.args.args[1:]] if forward else []
        layers = _layers(init, self) if init else {}
        first = _first_layer(forward, layers) if forward else None
        uses = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        uses |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
        loss = _loss_output(forward, self) if forward and len(forward_params) > 1 else None
        return ModelClass(node.name, self.path, self.site(node), params, forward_params, first,
                          uses, node, loss)


def _bound_name(node: ast.expr) -> str | None:
    """`criterion` for `criterion` and `self.criterion`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr
    return None


def _loss_output(forward: ast.FunctionDef, reader: _Reader) -> tuple[str, Site] | None:
    """Where a forward that takes the targets returns its loss: a tuple's item or a dict's
    key named like a loss."""
    for node in ast.walk(forward):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        value = node.value
        if isinstance(value, ast.Tuple):
            for index, item in enumerate(value.elts):
                if isinstance(item, ast.Name) and "loss" in item.id.lower():
                    return f"[{index}]", reader.site(node)
        if isinstance(value, ast.Dict):
            for key in value.keys:
                if (isinstance(key, ast.Constant) and isinstance(key.value, str)
                        and "loss" in key.value.lower()):
                    return f"[{key.value!r}]", reader.site(node)
    return None


def _is_loss(name: str) -> bool:
    short = name.rsplit(".", 1)[-1]
    if name.startswith("torch.nn.functional."):
        return short.endswith("_loss") or short in ("cross_entropy", "nll_loss",
                                                    "binary_cross_entropy",
                                                    "binary_cross_entropy_with_logits")
    return name.startswith("torch.nn.") and short.endswith("Loss")


def _literal_keywords(node: ast.Call) -> dict[str, str]:
    return {keyword.arg: ast.unparse(keyword.value) for keyword in node.keywords
            if keyword.arg is not None and is_literal(keyword.value)}


def is_literal(node: ast.expr | str) -> bool:
    """Whether an expression (or its source) is a literal: `32`, `0.1`, `(3, 3)`."""
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _params(init: ast.FunctionDef) -> list[Param]:
    args = init.args
    positional = [*args.posonlyargs, *args.args][1:]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)
    pairs = list(zip(positional, defaults, strict=True))
    pairs += list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
    return [Param(arg.arg, ast.unparse(default) if default is not None else None,
                  ast.unparse(arg.annotation) if arg.annotation is not None else None)
            for arg, default in pairs]


def _layers(init: ast.FunctionDef, reader: _Reader) -> dict[str, Layer]:
    """`self.NAME = Layer(...)` in __init__, by NAME."""
    found = {}
    for node in ast.walk(init):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        for target in node.targets:
            if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                    and target.value.id == "self"):
                found[target.attr] = _layer(node.value, reader)
    return found


def _layer(call: ast.Call, reader: _Reader) -> Layer:
    kind = qualname(call.func, reader.names) or ast.unparse(call.func)
    if kind.endswith("Sequential") and call.args and isinstance(call.args[0], ast.Call):
        return _layer(call.args[0], reader)  # the first layer of the stack meets the input
    return Layer(kind, tuple(ast.unparse(arg) for arg in call.args),
                 {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg},
                 reader.site(call))


def _first_layer(forward: ast.FunctionDef, layers: dict[str, Layer]) -> Layer | None:
    """The layer `forward` calls on its first argument as it is: `self.embed(x)`."""
    if len(forward.args.args) < 2:
        return None
    first = forward.args.args[1].arg
    calls = [node for node in ast.walk(forward) if isinstance(node, ast.Call)
             and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == first
             and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
             and node.func.value.id == "self" and node.func.attr in layers]
    if not calls:
        return None
    call = min(calls, key=lambda node: (node.lineno, node.col_offset))
    assert isinstance(call.func, ast.Attribute)
    return layers[call.func.attr]


def _trains_at_import(module: ast.Module, classes: set[str]) -> bool:
    """A script: at its top level, a loop, a `with`, a bare call, or a model or optimizer built
    (not under `if __name__ == "__main__":`)."""
    for node in module.body:
        if isinstance(node, (ast.For, ast.While, ast.With, ast.AsyncFor, ast.AsyncWith)):
            return True
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and not _is_harmless_call(node.value)):
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for call in ast.walk(node.value):
                if isinstance(call, ast.Call) and _builds_training(call, classes):
                    return True
    return False


def _is_harmless_call(call: ast.Call) -> bool:
    name = ast.unparse(call.func)
    return name.endswith(("manual_seed", "seed", "filterwarnings", "basicConfig",
                          "set_default_dtype", "setdefault", "append", "insert"))


def _builds_training(call: ast.Call, classes: set[str]) -> bool:
    name = ast.unparse(call.func)
    return (name.rsplit(".", 1)[-1] in classes or ".optim." in f".{name}"
            or name.endswith((".cuda", ".to", "DataLoader")))

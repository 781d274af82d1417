"""The text of a written target: `forward`, `train_step` and the resumable `train_steps`, each
guess under a `# GUESS: confirm ...` comment. A guess with nothing to go on is `_edit(...)`,
which stops the run naming its line; an input that does not fit the model stops it naming the
line that makes the input."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from cudalint.runtime.smoke.scaffold.facts import ModelClass, Param, ProjectFacts, is_literal
from cudalint.runtime.smoke.scaffold.loss import LossPlan, loss_plan
from cudalint.runtime.smoke.scaffold.values import (
    Choice,
    Guess,
    argument_guesses,
    input_guess,
    optimizer_guess,
)

GUESS = "# GUESS: confirm"
_INPUT_MARK = "@@INPUT_LINE@@"


@dataclass
class Written:
    text: str
    model: ModelClass
    guesses: int  # lines marked GUESS
    to_edit: int  # of them, those with nothing to go on (`_edit(...)`)
    found: list[str] = field(default_factory=list)  # what was read: "ResidualMLP (model.py:21)"


def write_target(facts: ProjectFacts, model: ModelClass, target: Path) -> Written:
    arguments = argument_guesses(model, facts)
    known = {param.name: param.default for param in model.params
             if param.default is not None and is_literal(param.default)}
    known |= {param.name: guess.value for param, guess in arguments if guess.value is not None}
    lines = [*_head(facts, target), *_model_source(facts, model, target), *_helpers()]
    lines += _build_model(model, arguments)
    inputs = input_guess(model, known)
    lines += _inputs(inputs)
    loss, optimizer = loss_plan(facts, model, inputs.value or ""), optimizer_guess(facts)
    lines += _targets(loss)
    lines += _loss(loss)
    lines += _entry_points(facts, optimizer)
    start = lines.index("def make_inputs(batch_size: int) -> torch.Tensor:")
    input_line = next(number for number, line in enumerate(lines[start:], start + 1)
                      if line.startswith("    return "))
    text = "\n".join(lines).replace(_INPUT_MARK, str(input_line)) + "\n"
    guesses = sum(line.strip().startswith(GUESS) for line in lines)
    to_edit = sum("_edit(" in line for line in lines if not line.lstrip().startswith("def "))
    found = [f"{model.name} ({model.site})"]
    found += [f"{call.qualname.rsplit('.', 1)[-1]} ({call.site})"
              for call in (optimizer.found, loss.found) if call is not None]
    return Written(text, model, guesses, to_edit, found)


def _head(facts: ProjectFacts, target: Path) -> list[str]:
    name = target.name
    return [
        f'"""Smoke target for {facts.root.name}, written by `cudalint smoke --init` from a reading',
        "of the project.",
        "",
        f"Each line under `{GUESS} ...` is a guess: check it, edit it where it is wrong. A guess",
        "that does not work stops the run with a message naming the line to edit. Then:",
        "",
        f"    cudalint smoke {name}:forward                  # the model's forward pass",
        f"    cudalint smoke {name}:train_step               # four steps on one batch",
        f"    cudalint smoke {name}:train_steps --interrupt 2  # a resume from a checkpoint",
        "",
        "Every run is seeded alike, and every random number below is drawn on the CPU and moved,",
        "so that the device's numbers can be compared with the CPU's (see docs/smoke.md).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import re",
        "import sys",
        "from pathlib import Path",
        "from typing import Any",
        "",
        "import torch",
        "from torch import nn",
        "",
    ]


def _model_source(facts: ProjectFacts, model: ModelClass, target: Path) -> list[str]:
    """`from model import Net`; or, when the model's file trains as it is imported, a copy of
    the definitions the class needs."""
    if model.path in facts.trains_at_import:
        return _copied(facts, model)
    root = model.path.parent
    while (root / "__init__.py").exists():
        root = root.parent
    module = ".".join(model.path.relative_to(root).with_suffix("").parts)
    lines = []
    folder = target.resolve().parent
    if root.resolve() != folder:
        relative = Path(os.path.relpath(root.resolve(), folder)).as_posix()
        lines.append(f"sys.path.insert(0, str(Path(__file__).resolve().parent / {relative!r}))")
    return [*lines, f"from {module} import {model.name}  # {model.site}", "", ""]


def _copied(facts: ProjectFacts, model: ModelClass) -> list[str]:
    """The imports and the top-level definitions of the model's file that its class needs."""
    module, source = facts.modules[model.path], facts.sources[model.path]
    defined: dict[str, ast.stmt] = {}
    for node in module.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            defined[node.name] = node
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1
              and isinstance(node.targets[0], ast.Name) and is_literal(node.value)):
            defined[node.targets[0].id] = node
    needed: set[str] = set()
    queue = [model.name]
    while queue:
        name = queue.pop()
        if name in needed or name not in defined:
            continue
        needed.add(name)
        queue += [n.id for n in ast.walk(defined[name]) if isinstance(n, ast.Name)]
    imports = [ast.get_source_segment(source, node) or "" for node in module.body
               if isinstance(node, (ast.Import, ast.ImportFrom))
               and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")]
    kept = [line for line in imports if line not in ("import torch", "from torch import nn",
                                                     "import sys", "import re")]
    file = model.site.file
    lines = [f"# {file} trains as soon as it is imported: what {model.name} needs is copied here.",
             f"{GUESS} this copy is the same as {file}'s (keep them in step).",
             *kept, ""]
    kept_nodes = [defined[name] for name in needed]
    for node in module.body:
        if node in kept_nodes:
            start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            end = node.end_lineno or node.lineno
            lines += ["", *source.splitlines()[start - 1:end]]
    return [*lines, "", ""]


def _helpers() -> list[str]:
    return [
        "_HERE = Path(__file__).name",
        "_SHAPE_ERROR = re.compile(r\"shape|size|dimension|mat1|expected|argument|unpack\", "
        "re.IGNORECASE)",
        "",
        "",
        "class GuessError(RuntimeError):",
        '    """A guess of `cudalint smoke --init` that does not fit: edit the line named."""',
        "",
        "",
        "def _edit(what: str) -> Any:",
        '    """Stands for a value the reading of the project could not guess."""',
        "    line = sys._getframe(1).f_lineno",
        '    raise GuessError(f"{_HERE}:{line}: {what}: edit that line")',
        "",
        "",
        "def _main_output(output: Any) -> torch.Tensor:",
        '    """The tensor the loss takes, from a model that returns a tuple or a dict."""',
        "    if isinstance(output, dict):",
        "        output = next(iter(output.values()))",
        "    while isinstance(output, (tuple, list)):",
        "        output = output[0]",
        "    return output",
        "",
        "",
        "def _run(model: nn.Module, *inputs: torch.Tensor) -> Any:",
        "    try:",
        "        return model(*inputs)",
        "    except (RuntimeError, TypeError, ValueError, IndexError) as error:",
        "        if not _SHAPE_ERROR.search(str(error)):",
        "            raise",
        f'        raise GuessError(f"{{_HERE}}:{_INPUT_MARK}: the input made there does not fit '
        '"',
        '                         f"{type(model).__name__}: {error}") from error',
        "",
        "",
    ]


def _guess_lines(guess: Guess, indent: str) -> list[str]:
    return [f"{indent}{GUESS} {guess.reason}"]


def _build_model(model: ModelClass, arguments: list[tuple[Param, Guess]]) -> list[str]:
    lines = ["def build_model() -> nn.Module:",
             f'    """{model.name} ({model.site}), built on the CPU: every device starts from '
             'the same weights."""']
    if not arguments:
        return [*lines, f"    return {model.name}()", "", ""]
    lines.append(f"    return {model.name}(")
    for param, guess in arguments:
        lines += _guess_lines(guess, "        ")
        value = guess.value if guess.known else f"_edit({guess.reason!r})"
        lines.append(f"        {param.name}={value},")
    return [*lines, "    )", "", ""]


def _inputs(guess: Guess) -> list[str]:
    return ["def make_inputs(batch_size: int) -> torch.Tensor:",
            '    """A batch for forward(), drawn on the CPU."""',
            *_guess_lines(guess, "    "),
            f"    return {guess.value}",
            "", ""]


def _targets(loss: LossPlan) -> list[str]:
    body = (f"    return {loss.targets}" if loss.targets is not None
            else f"    return _edit({('make ' + loss.targets_reason)!r})")
    return ["def make_targets(inputs: torch.Tensor, output: torch.Tensor) -> torch.Tensor:",
            '    """What the loss compares the output with, drawn on the CPU."""',
            f"    {GUESS} {loss.targets_reason}", body, "", ""]


def _loss(loss: LossPlan) -> list[str]:
    return ["def compute_loss(model: nn.Module, inputs: torch.Tensor,",
            "                 targets: torch.Tensor) -> torch.Tensor:",
            '    """The project\'s loss, as it computes it."""',
            f"    {GUESS} {loss.reason}",
            *loss.body, "", ""]


def _entry_points(facts: ProjectFacts, optimizer: Choice) -> list[str]:
    saves = [f"{call.site}: `{call.site.code}`" for call in facts.checkpoints[:4]]
    checkpoint = ([f"    {GUESS} the checkpoint holds what the project's own saves hold:",
                   *(f"    #   {where}" for where in saves)] if saves
                  else [f"    {GUESS} the checkpoint (no torch.save found in the project)"])
    return [
        "def forward(device: torch.device, batch_size: int = 4) -> Any:",
        '    """The forward pass, in eval mode."""',
        "    model = build_model().to(device).eval()",
        "    with torch.no_grad():",
        "        return _run(model, make_inputs(batch_size).to(device))",
        "",
        "",
        "def train_step(device: torch.device, batch_size: int = 4) -> dict[str, Any]:",
        '    """Four optimizer steps on one batch (the loss must go down): the loss and the',
        '    weights after them."""',
        "    state = train_steps(device, batch_size, steps=4)",
        '    return {"loss": state["loss"], "model": state["model"]}',
        "",
        "",
        "def train_steps(device: torch.device, batch_size: int = 4, steps: int = 4,",
        "                resume: dict[str, Any] | None = None) -> dict[str, Any]:",
        '    """Train up to step `steps`, from `resume` (what an earlier call returned) when',
        '    given: `cudalint smoke ...:train_steps --interrupt 2`."""',
        "    model = build_model()",
        "    for module in model.modules():  # each device draws other dropout masks",
        "        if isinstance(module, nn.modules.dropout._DropoutNd):",
        "            module.p = 0.0",
        "        elif isinstance(module, nn.MultiheadAttention):",
        "            module.dropout = 0.0",
        "    inputs = make_inputs(batch_size)",
        "    # The output's shape in training (a model may give another one in eval mode), for",
        "    # the targets; the buffers a training pass updates (BatchNorm's) are put back.",
        "    before = {key: value.clone() for key, value in model.state_dict().items()}",
        "    with torch.no_grad():",
        "        targets = make_targets(inputs, _main_output(_run(model.train(), inputs)))",
        "    model.load_state_dict(before)",
        "    model.to(device).train()",
        *_guess_lines(optimizer.guess, "    "),
        f"    optimizer = {optimizer.build}(model.parameters(), {optimizer.guess.value})",
        "    start = 0",
        *checkpoint,
        "    if resume is not None:",
        '        model.load_state_dict(resume["model"])',
        '        optimizer.load_state_dict(resume["optimizer"])',
        '        start = int(resume["step"])',
        "    inputs, targets = inputs.to(device), targets.to(device)",
        "    loss = torch.zeros((), device=device)",
        "    for _ in range(start, steps):",
        "        optimizer.zero_grad()",
        "        loss = compute_loss(model, inputs, targets)",
        "        loss.backward()",
        "        optimizer.step()",
        '    return {"loss": loss.detach(), "model": model.state_dict(),',
        '            "optimizer": optimizer.state_dict(), "step": steps}',
    ]


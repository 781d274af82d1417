"""The loss a written target trains with: the project's own, as it computes it.

In order: the loss the model returns when forward also takes the targets (`logits, loss =
model(x, y)`); a loss function the project calls, with its arguments as it writes them
(`F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))`); a loss module it
builds and calls (`criterion(model(x), y)`). Each is written with the names of its output and
its target renamed, and targets made to fit it. Where none is found, or its arguments cannot be
read that way, the written `compute_loss` stops the run naming its line: a guessed loss (one
that compares a (B, 1, V) output with one class, exactly 0) would train nothing."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from cudalint.runtime.smoke.scaffold.facts import Call, ModelClass, ProjectFacts, in_tests

_CLASS_TARGET_LOSSES = frozenset({"CrossEntropyLoss", "NLLLoss", "cross_entropy", "nll_loss"})
_BINARY_LOSSES = frozenset({"BCELoss", "BCEWithLogitsLoss", "binary_cross_entropy",
                            "binary_cross_entropy_with_logits"})
_MODULES = frozenset({"torch", "nn"})  # names a copied expression may use besides its own two


@dataclass(frozen=True)
class LossPlan:
    """`body`: the lines of `compute_loss(model, inputs, targets)` (indented); `targets`: the
    expression of `make_targets(inputs, output)` (None: `_edit`); `reason`: the GUESS of each;
    `found`: the project's call it follows."""

    body: tuple[str, ...]
    reason: str
    targets: str | None
    targets_reason: str
    found: Call | None


def loss_plan(facts: ProjectFacts, model: ModelClass, inputs: str) -> LossPlan:
    if model.loss_output is not None:
        return _returned(model, inputs)
    for call in _ordered(facts.losses):
        plan = _called(call, f"nn.functional.{_short(call)}", functional=True)
        if plan is not None:
            return plan
    for call in _ordered(facts.loss_uses):
        keywords = ", ".join(f"{k}={v}" for k, v in call.keywords.items())
        plan = _called(call, f"nn.{_short(call)}({keywords})", functional=False)
        if plan is not None:
            return plan
    found = next(iter(_ordered(facts.losses)), None)
    where = f" ({found.site}: `{found.site.code}`, whose arguments are not read here)" if (
        found) else ""
    what = f"the loss: none found in the project{where}: compute it as your training does"
    return LossPlan((f"    return _edit({what!r})",), what, None,
                    "the targets of the project's loss (none found: write compute_loss below "
                    "too)", found)


def _returned(model: ModelClass, inputs: str) -> LossPlan:
    assert model.loss_output is not None
    index, site = model.loss_output
    target = model.forward[1]
    reason = (f"the loss {model.name} returns from forward(..., {target}) ({site}: "
              f"`{site.code}`)")
    body = (f"    return _run(model, inputs, targets){index}",)
    if inputs.startswith("torch.randint"):
        return LossPlan(body, reason, "inputs.roll(-1, dims=-1)",
                        f"the next token of each input, as {target!r} of a language model "
                        f"({model.name}.forward takes token ids)", None)
    return LossPlan(body, reason, None, f"the {target!r} {model.name}.forward takes", None)


def _called(call: Call, function: str, *, functional: bool) -> LossPlan | None:
    """The call with its output and target renamed `output` and `targets`; None when its two
    first arguments are not each an expression of one name of its own."""
    if len(call.args) < 2:
        return None
    try:
        first, second = (ast.parse(arg, mode="eval").body for arg in call.args[:2])
    except SyntaxError:
        return None
    names = [_free(first), _free(second)]
    bare = isinstance(first, ast.Name)
    if any(isinstance(node, ast.Call) for node in ast.walk(first)) and not _is_method_chain(
            first):
        first, bare = ast.Name("output", ast.Load()), True  # criterion(model(x), y)
        names[0] = set()
    if isinstance(second, ast.Subscript) and isinstance(second.value, ast.Name):
        second = second.value  # labels[start:end]: this batch's targets, the whole target here
        names[1] = {second.id}
    if not bare and len(names[0]) != 1:
        return None
    if len(names[1]) != 1 or (names[0] and names[0] == names[1]):
        return None
    renamed = {next(iter(names[0])): "output"} if names[0] else {}
    renamed[next(iter(names[1]))] = "targets"
    first, second = (_Rename(renamed).visit(node) for node in (first, second))
    extra = [f"{k}={v}" for k, v in call.sources.items()] if functional else []
    if any(_free(ast.parse(item.partition("=")[2], mode="eval").body) for item in extra):
        extra = [f"{k}={v}" for k, v in call.keywords.items()]  # the literal ones only
    arguments = ", ".join([ast.unparse(first), ast.unparse(second), *extra])
    reason = f"the loss as {call.site} computes it: `{call.site.code}`"
    body = ("    output = _main_output(_run(model, inputs))",
            f"    return {function}({arguments})")
    targets, why = _targets(_short(call), bare)
    return LossPlan(body, reason, targets, f"{why} ({call.site})", call)


def _targets(short: str, bare: bool) -> tuple[str, str]:
    if short in _CLASS_TARGET_LOSSES and bare:
        return ("torch.randint(0, output.shape[1], (output.shape[0], *output.shape[2:]))",
                f"class indices for {short}, over the output's dimension 1 as it takes it")
    if short in _CLASS_TARGET_LOSSES:
        return ("torch.randint(0, output.shape[-1], output.shape[:-1])",
                f"class indices for {short}, over the output's last dimension, which the "
                "project reshapes into the classes")
    if short in _BINARY_LOSSES:
        return "torch.rand(output.shape).round()", f"0/1 targets for {short}"
    return "torch.randn(output.shape)", f"values shaped like the output for {short}"


def _is_method_chain(node: ast.expr) -> bool:
    """`logits.view(-1, logits.size(-1))`: calls of methods of one name, not of the model."""
    return all(isinstance(call.func, ast.Attribute) for call in ast.walk(node)
               if isinstance(call, ast.Call))


def _free(node: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - _MODULES


class _Rename(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self.names.get(node.id, node.id), node.ctx)


def _short(call: Call) -> str:
    return call.qualname.rsplit(".", 1)[-1]


def _ordered(calls: list[Call]) -> list[Call]:
    """The project's calls before the tests'."""
    return sorted(calls, key=lambda call: in_tests(call.site.file))

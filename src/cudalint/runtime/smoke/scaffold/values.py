"""The guesses a written target makes: the model to build and its constructor's arguments, the
input its forward takes and the optimizer (the loss: `loss.py`). Each guess
says where it came from, for the `# GUESS:` comment above it."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from cudalint.runtime.smoke.scaffold.facts import (
    Call,
    ModelClass,
    Param,
    ProjectFacts,
    in_tests,
    is_literal,
)

# A name's parts -> a small value that fits most models (a guess, always marked).
_NAME_VALUES = (
    (("dropout", "drop", "noise", "std"), "0.0"),
    (("class", "label", "num_out", "n_out", "out_features", "out_dim", "output"), "10"),
    (("channel",), "3"),
    (("vocab", "token", "num_embeddings"), "100"),
    (("depth", "layer", "block", "head"), "2"),
    (("feature", "dim", "width", "hidden", "size", "input", "in_", "d_model", "units"), "32"),
)
_ANNOTATION_VALUES = {"int": "16", "float": "0.1", "bool": "False"}
# Layers whose first argument is the input's feature size, and the shape they take.
_FEATURE_LAYERS = {"Linear": "({}, {n})", "LayerNorm": "({}, {n})", "BatchNorm1d": "({}, {n})",
                   "Conv1d": "({}, {n}, 64)", "Conv2d": "({}, {n}, 32, 32)",
                   "BatchNorm2d": "({}, {n}, 32, 32)", "Conv3d": "({}, {n}, 8, 16, 16)"}
_RECURRENT = frozenset({"LSTM", "GRU", "RNN"})


@dataclass(frozen=True)
class Guess:
    value: str | None  # Python source; None: nothing to go on, the user must give it
    reason: str

    @property
    def known(self) -> bool:
        return self.value is not None


def main_model(facts: ProjectFacts) -> ModelClass | None:
    """The model the project trains: outside the tests, not a part of another model class,
    built somewhere outside a model class when one is; the first such in path order."""
    models = [m for m in facts.models if not m.in_tests] or facts.models
    if not models:
        return None
    names = {model.name for model in models}
    parts = {name for model in models for name in model.uses & names if name != model.name}
    tops = [model for model in models if model.name not in parts] or models
    built = [model for model in tops if model.name in facts.constructions]
    return (built or tops)[0]


def argument_guesses(model: ModelClass, facts: ProjectFacts) -> list[tuple[Param, Guess]]:
    """A value for each argument the constructor requires (those with a default keep it)."""
    return [(param, _argument(param, index, model, facts))
            for index, param in enumerate(model.params) if param.default is None]


def _argument(param: Param, index: int, model: ModelClass, facts: ProjectFacts) -> Guess:
    for positional, keywords, site in facts.constructions.get(model.name, []):
        value = keywords.get(param.name)
        if value is None and index < len(positional):
            value = positional[index]
        if value is not None and is_literal(value):
            return Guess(value, f"{site} builds {model.name} with {param.name}={value}")
    if param.name in facts.config:
        number, site = facts.config[param.name]
        return Guess(number, f"{site}: `{site.code}`")
    lowered = param.name.lower()
    for parts, value in _NAME_VALUES:
        if any(part in lowered for part in parts):
            return Guess(value, f"a small value for an argument named {param.name!r}")
    if param.annotation in _ANNOTATION_VALUES:
        return Guess(_ANNOTATION_VALUES[param.annotation],
                     f"a small value for an argument of type {param.annotation}")
    return Guess(None, f"give {model.name}'s {param.name!r} argument a value")


def input_guess(model: ModelClass, arguments: dict[str, str]) -> Guess:
    """The expression (in `batch_size`) that makes the input forward's first layer takes."""
    layer = model.first_layer
    fallback = Guess("torch.randn(batch_size, 32)",
                     f"no layer of {model.name} that forward() applies to its input was found: "
                     "give the input's real shape")
    if layer is None or not layer.args:
        return fallback
    size = _value(layer.args[0], arguments)
    kind = layer.kind.rsplit(".", 1)[-1]
    reason = f"{model.name}.forward() starts with {kind}({', '.join(layer.args)}) ({layer.site})"
    if size is None:
        return Guess(fallback.value, f"{reason}: the input's size {layer.args[0]!r} is not "
                                     "known: give it")
    if kind in _FEATURE_LAYERS:
        return Guess(f"torch.randn{_FEATURE_LAYERS[kind].format('batch_size', n=size)}", reason)
    if kind == "Embedding":
        return Guess(f"torch.randint(0, {size}, (batch_size, 16))", reason)
    if kind in _RECURRENT:
        first = layer.keywords.get("batch_first") == "True"
        shape = f"(batch_size, 16, {size})" if first else f"(16, batch_size, {size})"
        return Guess(f"torch.randn{shape}", reason)
    return Guess(fallback.value, f"{reason}: the shape it takes is not known: give it")


def _value(source: str, arguments: dict[str, str]) -> str | None:
    if source in arguments:
        return arguments[source]
    return source if is_literal(source) else None


@dataclass(frozen=True)
class Choice:
    """What the target builds (`torch.optim.AdamW`, `nn.CrossEntropyLoss()`; None: nothing
    found), the project's call it copies (None: none), and the guess that goes with it."""

    build: str | None
    found: Call | None
    guess: Guess


def optimizer_guess(facts: ProjectFacts) -> Choice:
    """The optimizer's class; the guess is its keyword arguments' source."""
    found = _first(facts.optimizers)
    if found is None:
        return Choice("torch.optim.AdamW", None, Guess("lr=1e-3", "no torch.optim optimizer "
                                                                  "found"))
    keywords = dict(found.keywords)
    reason = f"{found.site}: `{found.site.code}`"
    for name, source in found.sources.items():
        key = _config_key(source)
        if name not in keywords and key in facts.config:
            keywords[name], site = facts.config[key]
            reason += f"; {name} from {site}: `{site.code}`"
    if "lr" not in keywords:
        keywords = {"lr": "1e-3", **keywords}
        reason += " (its lr is not a number there: 1e-3 here)"
    return Choice(found.qualname, found,
                  Guess(", ".join(f"{k}={v}" for k, v in keywords.items()), reason))


def _config_key(source: str) -> str | None:
    """The configuration key a value reads: `cfg["lr"]`, `args.lr`, `LR` -> "lr"."""
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return str(node.slice.value)
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id.lower() if isinstance(node, ast.Name) else None


def _first(calls: list[Call]) -> Call | None:
    outside = [call for call in calls if not in_tests(call.site.file)]
    chosen = outside or calls
    return chosen[0] if chosen else None

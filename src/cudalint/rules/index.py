"""What the rules are, without importing them: `data/rule_index.json` lists every rule class
(code, module, class, the file kinds it reads, and for a Python rule the terms a file must name
for it to find anything, unless they depend on the project's settings). A run imports only the
rule modules for the kinds of the files it checks (a small run of Python files, only those whose
rules' terms its files name), and a run replayed from the cache imports none.

The file is generated from the rule modules themselves, with the rule pages: after adding or
changing a rule, run `python -m cudalint.docs docs/rules` (a test fails on a stale index).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudalint import data

if TYPE_CHECKING:
    from cudalint.engine.contract import Rule
    from cudalint.kinds import FileKind

NAME = "rule_index.json"
_PYTHON_KINDS = ("python", "notebook")  # a PythonRule reads Python files and notebook cells


@cache
def entries() -> tuple[dict[str, Any], ...]:
    """The index, in the registry's order (by code, each code's primary class first)."""
    return tuple(data.load(NAME)["rules"])


def codes() -> frozenset[str]:
    return frozenset(entry["code"] for entry in entries())


def entries_for(kinds: Iterable[FileKind],
                texts: Sequence[bytes] | None = None) -> list[dict[str, Any]]:
    """The entries of the rules that read one of `kinds`, in the registry's order; with
    `texts` (the Python files to check), only those of the rules that can find something in
    one of them (cudalint.engine.first_pass.prefilter: a rule finds nothing in a file naming none of
    its terms, and those terms change no other rule's findings there)."""
    wanted = {kind.value for kind in kinds}
    found = [e for e in entries() if wanted.intersection(e["kinds"])]
    if texts is None:
        return found
    return [e for e in found if e.get("terms") is None or _named(e["terms"], texts)]


def _named(terms: dict[str, list[Any]], texts: Sequence[bytes]) -> bool:
    from cudalint.engine.first_pass.prefilter import Prefilter

    prefilter = Prefilter(tuple(k.encode() for k in terms["keywords"]),
                          frozenset(w.encode() for w in terms["words"]),
                          frozenset(c.encode() for c in terms["calls"]),
                          tuple(p.encode() for p in terms.get("patterns", ())),
                          tuple(tuple(p.encode() for p in group)
                                for group in terms.get("together", ())))
    return any(prefilter.matches(text) for text in texts)


def entry_of(rule: type[Rule]) -> dict[str, Any]:
    from cudalint.engine.contract import FileRule, PythonRule
    from cudalint.kinds import FileKind

    kinds: list[str] = []
    entry: dict[str, Any] = {"code": rule.code, "module": rule.__module__,
                             "class": rule.__qualname__}
    if issubclass(rule, PythonRule):
        kinds = list(_PYTHON_KINDS)
        entry["terms"] = _static_terms(rule)
    elif issubclass(rule, FileRule):
        kinds = sorted(FileKind(kind).value for kind in rule.file_kinds)
    return {**entry, "kinds": kinds}


def _static_terms(rule: type[Rule]) -> dict[str, list[Any]] | None:
    """The rule's prefilter terms, or None where they depend on the settings."""
    from cudalint.engine.settings import Settings

    if rule.settings_terms:
        return None
    plain = rule.prefilter(Settings())
    other = rule.prefilter(Settings(helper_module="x._device", target_torch=(1, 8),
                                    first_party=frozenset({"x"}),
                                    extension_modules=frozenset({"x._C"}),
                                    own_cuda_method=True))
    if plain != other:
        raise ValueError(f"{rule.__qualname__}.prefilter() reads the settings: set "
                         f"settings_terms = True")
    found: dict[str, list[Any]] = {"keywords": list(plain.keywords), "words": sorted(plain.words),
                                   "calls": sorted(plain.calls)}
    if plain.patterns:
        found["patterns"] = list(plain.patterns)
    if plain.together:
        found["together"] = [list(group) for group in plain.together]
    return found


def generated() -> str:
    """The index as the rule modules define it today: one rule a line."""
    from cudalint.rules import all_rules

    lines = ",\n".join(f"  {json.dumps(entry_of(rule))}" for rule in all_rules())
    return f'{{"rules": [\n{lines}\n]}}\n'


def path() -> Path:
    return Path(data.__file__).with_name(NAME)


def write() -> None:
    path().write_text(generated(), encoding="utf-8")

"""What the rules are, without importing them: `data/rule_index.json` lists every rule class
(code, module, class, the file kinds it reads, and for a Python rule the terms a file must name
for it to find anything, unless they depend on the project's settings). A run imports only the
rule modules for the kinds of the files it checks (a small run of Python files, only those whose
rules' terms its files name), and a run replayed from the cache imports none.

The file is generated from the rule modules themselves, with the rule pages
(cudalint.rules.index_build): after adding or changing a rule, run
`python -m cudalint.docs docs/rules` (a test fails on a stale index).
"""

from __future__ import annotations

from cudalint.codes import entries

TYPE_CHECKING = False  # typing's, without importing typing (a run replayed from the cache)
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from cudalint.kinds import FileKind


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

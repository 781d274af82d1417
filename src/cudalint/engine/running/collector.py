"""The cyclic garbage collector, held off while a file is checked.

A check makes a Python object of every node and every piece of whitespace of what LibCST reads
(and `ast` makes its own), and keeps them until the file is done. CPython's collector runs
every 700 new objects and walks the young survivors again and again while those trees grow:
16 % of LibCST's parse (py-spy, native frames). A check makes almost no cycles of its own (the
walk broke the two it made: cudalint.engine.walk.traversal), so its trees are freed by reference
counting when it ends; the collector then runs once, over the youngest generation, which holds
everything the check made and kept, since none ran meanwhile (what `ast.literal_eval`, which
LibCST calls for a string's value, leaves behind: a few closures). Both together took a fifth
of the CPU off a cold check of the torch package, with the same output.

The language server keeps its own policy (cudalint.lsp.linter: its loaded rules frozen, higher
thresholds), since it checks on a thread while the event loop runs.
"""

from __future__ import annotations

import gc


class HeldOff:
    """`with HeldOff():` no automatic collection inside; one of the youngest generation at
    the end. Inside another (a cached file's check, a notebook's), or where the program has
    turned the collector off itself, it does nothing."""

    __slots__ = ("_mine",)

    def __init__(self) -> None:
        self._mine = False

    def __enter__(self) -> HeldOff:
        self._mine = gc.isenabled()
        if self._mine:
            gc.disable()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._mine:
            gc.collect(0)
            gc.enable()

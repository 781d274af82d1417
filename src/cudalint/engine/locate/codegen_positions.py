"""The positions LibCST's PositionProvider gives, from LibCST's own code generation, at less
cost: a token without a line break moves the column without a regex split, the positions
pending on the stack are tuples, and a syntactic position is recorded by a plain context
manager instead of a generator (together a fifth of generating a module's code)."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState


def positions_of(node: cst.CSTNode, module: cst.Module, line: int = 1,
                 indent: Sequence[str] = (), column: int = 0) -> dict[cst.CSTNode, CodeRange]:
    """The position of `node` and of every node in it, `node` being generated from `line`
    at `indent` (a statement of `module`; the module itself from line 1), or from `column`
    of `line` (an element of a table, whose code holds its own line breaks and indentation)."""
    provider = PositionProvider()
    state = _State(default_indent=module.default_indent,
                   default_newline=module.default_newline, provider=provider,
                   indent_tokens=list(indent), line=line)
    state.column = column
    node._codegen(state)
    return _computed(state)


class _State(PositionProvidingCodegenState):
    __slots__ = ()

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            self._update_position(value)
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append((self.line, self.column))  # type: ignore[arg-type]

    def after_codegen(self, node: cst.CSTNode) -> None:
        start: tuple[int, int] = self._stack.pop()  # type: ignore[assignment]
        computed = _computed(self)
        if node not in computed:
            computed[node] = CodeRange(CodePosition(*start),
                                       CodePosition(self.line, self.column))

    def record_syntactic_position(  # type: ignore[override]
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> _Syntactic:
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """What `PositionProvidingCodegenState.record_syntactic_position` records, on leaving."""

    __slots__ = ("_end_node", "_node", "_start", "_start_node", "_state")

    def __init__(self, state: _State, node: cst.CSTNode, start_node: cst.CSTNode | None,
                 end_node: cst.CSTNode | None) -> None:
        self._state, self._node = state, node
        self._start_node, self._end_node = start_node, end_node
        self._start = (0, 0)

    def __enter__(self) -> None:
        self._start = (self._state.line, self._state.column)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        state = self._state
        computed = _computed(state)
        start = (computed[self._start_node].start if self._start_node is not None
                 else CodePosition(*self._start))
        end = (computed[self._end_node].end if self._end_node is not None
               else CodePosition(state.line, state.column))
        computed[self._node] = CodeRange(start, end)


def _computed(state: _State) -> dict[cst.CSTNode, CodeRange]:
    return state.provider._computed  # type: ignore[return-value]
